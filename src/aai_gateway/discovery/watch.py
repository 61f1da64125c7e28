"""Noticing descriptor changes: file-system events on the scan paths, and an optional periodic tick."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.to_thread
import watchfiles
from watchfiles import Change

from aai_gateway.config import Settings
from aai_gateway.discovery.scan import DESCRIPTOR

log = logging.getLogger(__name__)

OnChange = Callable[[str], Awaitable[None]]


WORKFLOWS = "workflows"
"""The folder of saved workflows in the AAI home (`Settings.workflows_dir`)."""
FALLBACK_SECONDS = 10.0
"""How often scan paths that cannot be watched are rescanned instead."""


async def watch(settings: Settings, on_change: OnChange, stop: anyio.Event | None = None) -> None:
    """Call `on_change(reason)` whenever descriptors may have changed; runs until cancelled or `stop` is set.

    Set `stop` before cancelling: the watching thread sees it within 50 ms, while a bare cancellation
    waits for the thread's own timeout (1 s) before the process can exit.

    Only `aai.json` files and the app folders directly in a scan path count, so that logs or other
    files written under `~/.aai` cause no rescans. Scan paths that do not exist yet are not watched;
    the periodic rescan (`scanIntervalMinutes`) covers them and anything a file system does not report.
    Once a watcher is up it asks for one rescan, for what changed between the first scan and then. Folders
    it may not read are skipped; a scan path it cannot watch at all is logged and rescanned every
    `FALLBACK_SECONDS` instead, so watching never stops the gateway.
    """
    roots = [p.resolve() for p in settings.scan_paths if p.is_dir()]
    workflows = settings.workflows_dir.resolve()
    watched = [*roots, workflows] if workflows.is_dir() and workflows not in roots else roots
    stop = stop or anyio.Event()
    async with anyio.create_task_group() as group:
        if watched:
            group.start_soon(_watch_all, watched, on_change, stop)
        if settings.scan_interval_minutes > 0:
            group.start_soon(_tick, settings.scan_interval_minutes * 60, on_change)


def relevance(roots: list[Path]) -> Callable[[Change, str], bool]:
    """The filter of events that may change the apps: `aai.json` files, app folders directly in a root, and
    the saved workflows (`*.json` directly in `workflows`).

    Other files directly in a root (the history database and its WAL, consent.json, config.json, the web
    token and their temporary files) are written while serving, and must not cause rescans: a path directly
    in a root counts only while it is a folder, or when it was one.
    """
    folders = {child for root in roots for child in _folders(root)}

    def relevant(change: Change, path: str) -> bool:
        where = Path(path)
        if where.name == DESCRIPTOR:
            return True
        if where.parent.name == WORKFLOWS and (where.parent in roots or where.parent.parent in roots):
            return where.suffix == ".json" and not where.name.startswith(".")
        if where.parent not in roots:
            return False
        if where.is_dir():
            folders.add(where)
            return True
        if where in folders:
            folders.discard(where)
            return True
        return False

    return relevant


def _folders(root: Path) -> list[Path]:
    try:
        return [child for child in root.iterdir() if child.is_dir()]
    except OSError:
        return []


async def _watch_all(roots: list[Path], on_change: OnChange, stop: anyio.Event) -> None:
    """One watcher for every root; if it fails, one per root, and periodic rescans for those that fail too."""
    try:
        await _files(roots, on_change, stop)
        return
    except Exception as exc:  # watchfiles raises OSError, RuntimeError and its own kinds
        if len(roots) == 1:
            await _fall_back(roots[0], exc, on_change, stop)
            return
        log.warning("cannot watch %s together (%s); watching each alone", ", ".join(map(str, roots)), exc)
    async with anyio.create_task_group() as group:
        for root in roots:
            group.start_soon(_watch_one, root, on_change, stop)


async def _watch_one(root: Path, on_change: OnChange, stop: anyio.Event) -> None:
    try:
        await _files([root], on_change, stop)
    except Exception as exc:
        await _fall_back(root, exc, on_change, stop)


async def _fall_back(root: Path, exc: Exception, on_change: OnChange, stop: anyio.Event) -> None:
    log.warning("cannot watch %s (%s); rescanning every %g s instead", root, exc, FALLBACK_SECONDS)
    while not stop.is_set():
        with anyio.move_on_after(FALLBACK_SECONDS):
            await stop.wait()
        if not stop.is_set():
            await on_change(f"periodic rescan of {root}, which cannot be watched")


async def _files(roots: list[Path], on_change: OnChange, stop: anyio.Event) -> None:
    """Watch in a worker thread, where setting up the watches (a walk of every root) cannot hold up serving."""
    first = True

    async def tell(reason: str) -> None:
        await on_change(reason)

    def changes() -> None:
        nonlocal first
        for batch in watchfiles.watch(
            *roots,
            watch_filter=relevance(roots),
            debounce=200,
            step=50,
            rust_timeout=1000,
            yield_on_timeout=True,
            recursive=True,
            ignore_permission_denied=True,
            stop_event=stop,
        ):
            if first or batch:
                reason = "the watcher starting" if first else f"{len(batch)} descriptor change(s)"
                first = False
                anyio.from_thread.run(tell, reason)

    try:
        await anyio.to_thread.run_sync(changes, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        stop.set()  # ends the abandoned thread within `step`
        raise


async def _tick(seconds: float, on_change: OnChange) -> None:
    while True:
        await anyio.sleep(seconds)
        await on_change("periodic rescan")

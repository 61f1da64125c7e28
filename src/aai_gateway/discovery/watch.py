"""Noticing descriptor changes: file-system events on the scan paths, and an optional periodic tick."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.to_thread
import watchfiles
from watchfiles import Change

from aai_gateway.config import Settings
from aai_gateway.discovery import inotify
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
    """One watcher for every root; if it fails, one per root, and periodic rescans for those that fail too.
    On Linux, inotify read on the event loop (see discovery/inotify.py), else watchfiles in a thread."""
    try:
        notify = inotify.Inotify()
    except OSError:
        pass
    else:
        await _notified(notify, roots, on_change, stop)
        return
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


class _Folders:
    """The folders one inotify instance watches: each root and the folders directly in it (app folders),
    where descriptors are; the history, the logs and other files written while serving are never asked for."""

    def __init__(self, notify: inotify.Inotify, roots: list[Path]) -> None:
        self.notify = notify
        self.roots = set(roots)
        self.by_wd: dict[int, Path] = {}
        self.failed: dict[Path, OSError] = {}
        """Why a folder could not be watched."""
        self._full_logged = False

    def add(self, folder: Path) -> bool:
        if len(self.by_wd) >= MAX_FOLDERS:
            if not self._full_logged:
                self._full_logged = True
                log.warning("watching %d folders already; others are seen by rescans only", MAX_FOLDERS)
            return False
        try:
            self.by_wd[self.notify.add(folder)] = folder
        except OSError as exc:
            log.debug("cannot watch %s: %s", folder, exc)
            self.failed[folder] = exc
            return False
        return True

    def add_root(self, root: Path) -> bool:
        if not self.add(root):
            return False
        for child in _folders(root):
            self.add(child)
        return True

    def changes(self, relevant: Callable[[Change, str], bool]) -> set[Path]:
        """The paths the events waiting now tell of a relevant change to; new app folders are watched too."""
        found: set[Path] = set()
        for event in self.notify.read():
            if event.mask & inotify.IN_Q_OVERFLOW:  # events were lost: watch whatever is there now, rescan
                for root in self.roots:
                    self.add_root(root)
                found.update(self.roots)
                continue
            if event.mask & inotify.IN_IGNORED:
                self.by_wd.pop(event.wd, None)
                continue
            folder = self.by_wd.get(event.wd)
            if folder is None:
                continue
            path = folder / event.name if event.name else folder
            if event.mask & inotify.ADDED and event.mask & inotify.IN_ISDIR and folder in self.roots:
                self.add(path)
            change = Change.added if event.mask & inotify.ADDED else Change.deleted
            if event.mask & inotify.IN_CLOSE_WRITE:
                change = Change.modified
            if relevant(change, str(path)):
                found.add(path)
        return found


MAX_FOLDERS = 10_000
"""Folders one gateway watches at most (the system's own limit is often 8,192 for all of a user's programs)."""
DEBOUNCE = 0.2
"""Seconds of quiet gathered into one rescan after a change."""


async def _notified(notify: inotify.Inotify, roots: list[Path], on_change: OnChange, stop: anyio.Event) -> None:
    """Watch with inotify until `stop` is set or the task is cancelled; roots it cannot watch fall back to
    periodic rescans."""
    folders = _Folders(notify, roots)
    relevant = relevance(roots)
    unwatched = [root for root in roots if not folders.add_root(root)]
    changed = asyncio.Event()
    pending: set[Path] = set()

    def readable() -> None:
        try:
            found = folders.changes(relevant)
        except OSError as exc:
            log.warning("reading file-system events failed: %s", exc)
            return
        if found:
            pending.update(found)
            changed.set()

    loop = asyncio.get_running_loop()
    loop.add_reader(notify.fd, readable)
    try:
        async with anyio.create_task_group() as group:
            for root in unwatched:
                why = folders.failed.get(root, OSError(f"more than {MAX_FOLDERS} folders"))
                group.start_soon(_fall_back, root, why, on_change, stop)

            async def stopping() -> None:
                await stop.wait()
                group.cancel_scope.cancel()

            group.start_soon(stopping)
            await on_change("the watcher starting")
            while True:
                await changed.wait()
                await anyio.sleep(DEBOUNCE)
                count = len(pending)
                pending.clear()
                changed.clear()
                await on_change(f"{count} descriptor change(s)")
    finally:
        loop.remove_reader(notify.fd)
        notify.close()


async def _tick(seconds: float, on_change: OnChange) -> None:
    while True:
        await anyio.sleep(seconds)
        await on_change("periodic rescan")

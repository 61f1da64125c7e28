"""Noticing descriptor changes: file-system events on the scan paths, and an optional periodic tick."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from watchfiles import Change, awatch

from aai_gateway.config import Settings
from aai_gateway.discovery.scan import DESCRIPTOR

log = logging.getLogger(__name__)

OnChange = Callable[[str], Awaitable[None]]


async def watch(settings: Settings, on_change: OnChange, stop: anyio.Event | None = None) -> None:
    """Call `on_change(reason)` whenever descriptors may have changed; runs until cancelled or `stop` is set.

    Set `stop` before cancelling: the watching thread sees it within 50 ms, while a bare cancellation
    waits for the thread's own timeout (5 s) before the process can exit.

    Only `aai.json` files and the app folders directly in a scan path count, so that logs or other
    files written under `~/.aai` cause no rescans. Scan paths that do not exist yet are not watched;
    the periodic rescan (`scanIntervalMinutes`) covers them and anything a file system does not report.
    """
    roots = [p.resolve() for p in settings.scan_paths if p.is_dir()]
    async with anyio.create_task_group() as group:
        if roots:
            group.start_soon(_files, roots, on_change, stop or anyio.Event())
        if settings.scan_interval_minutes > 0:
            group.start_soon(_tick, settings.scan_interval_minutes * 60, on_change)


def relevance(roots: list[Path]) -> Callable[[Change, str], bool]:
    """The filter of events that may change the apps: `aai.json` files, and app folders directly in a root.

    Other files directly in a root (the history database and its WAL, consent.json, config.json, the web
    token and their temporary files) are written while serving, and must not cause rescans: a path directly
    in a root counts only while it is a folder, or when it was one.
    """
    folders = {child for root in roots for child in _folders(root)}

    def relevant(change: Change, path: str) -> bool:
        where = Path(path)
        if where.name == DESCRIPTOR:
            return True
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


async def _files(roots: list[Path], on_change: OnChange, stop: anyio.Event) -> None:
    changes = awatch(*roots, watch_filter=relevance(roots), debounce=200, step=50, recursive=True, stop_event=stop)
    async for batch in changes:
        await on_change(f"{len(batch)} descriptor change(s)")


async def _tick(seconds: float, on_change: OnChange) -> None:
    while True:
        await anyio.sleep(seconds)
        await on_change("periodic rescan")

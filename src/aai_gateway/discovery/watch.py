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


async def watch(settings: Settings, on_change: OnChange) -> None:
    """Call `on_change(reason)` whenever descriptors may have changed; runs until cancelled.

    Only `aai.json` files and the app folders directly in a scan path count, so that logs or other
    files written under `~/.aai` cause no rescans. Scan paths that do not exist yet are not watched;
    the periodic rescan (`scanIntervalMinutes`) covers them and anything a file system does not report.
    """
    roots = [p.resolve() for p in settings.scan_paths if p.is_dir()]
    async with anyio.create_task_group() as group:
        if roots:
            group.start_soon(_files, roots, on_change)
        if settings.scan_interval_minutes > 0:
            group.start_soon(_tick, settings.scan_interval_minutes * 60, on_change)


async def _files(roots: list[Path], on_change: OnChange) -> None:
    def relevant(change: Change, path: str) -> bool:
        where = Path(path)
        return where.name == DESCRIPTOR or where.parent in roots

    async for batch in awatch(*roots, watch_filter=relevant, debounce=200, step=50, recursive=True):
        await on_change(f"{len(batch)} descriptor change(s)")


async def _tick(seconds: float, on_change: OnChange) -> None:
    while True:
        await anyio.sleep(seconds)
        await on_change("periodic rescan")

"""Which file-system events make the gateway rescan: descriptors and app folders, not its own files."""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from watchfiles import Change

from aai_gateway.config import load_settings
from aai_gateway.discovery.watch import relevance, watch


def test_the_gateways_own_files_in_the_aai_home_cause_no_rescan(tmp_path: Path) -> None:
    relevant = relevance([tmp_path])
    for name in ("history.db", "history.db-wal", "history.db-shm", "consent.json", "web-token", "tmpab12.tmp"):
        (tmp_path / name).write_text("x")
        assert not relevant(Change.modified, str(tmp_path / name)), name
        (tmp_path / name).unlink()
        assert not relevant(Change.deleted, str(tmp_path / name)), name
    assert not relevant(Change.modified, str(tmp_path / "logs" / "gateway.log"))


def test_descriptors_and_app_folders_cause_a_rescan(tmp_path: Path) -> None:
    (tmp_path / "org.example.old").mkdir()
    relevant = relevance([tmp_path])
    assert relevant(Change.modified, str(tmp_path / "org.example.old" / "aai.json"))
    assert not relevant(Change.modified, str(tmp_path / "org.example.old" / "notes.txt"))
    (tmp_path / "org.example.new").mkdir()
    assert relevant(Change.added, str(tmp_path / "org.example.new"))
    shutil.move(tmp_path / "org.example.new", tmp_path.parent / f"{tmp_path.name}-moved-away")
    assert relevant(Change.deleted, str(tmp_path / "org.example.new"))
    (tmp_path / "org.example.old").rmdir()
    assert relevant(Change.deleted, str(tmp_path / "org.example.old"))


@pytest.mark.anyio
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
async def test_the_watcher_wakes_for_descriptors_and_sleeps_through_the_gateways_own_writes(tmp_path: Path) -> None:
    """The real watcher on a real AAI home: writes to open files (the history's log, the gateway's log) wake
    nothing, while a descriptor added, edited or removed, an app folder made after the start and a saved
    workflow each cause a rescan; no thread is started for it."""
    home = tmp_path / "home"
    aai = home / ".aai"
    (aai / "org.example.old").mkdir(parents=True)
    (aai / "logs").mkdir()
    (aai / "workflows").mkdir()
    settings = load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"})
    reasons: list[str] = []
    woken = anyio.Event()

    async def on_change(reason: str) -> None:
        reasons.append(reason)
        woken.set()

    async def rescans_after(change: Callable[[], object]) -> list[str]:
        nonlocal woken
        reasons.clear()
        woken = anyio.Event()
        change()
        with anyio.fail_after(10):
            await woken.wait()
        return list(reasons)

    threads = threading.active_count()
    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(watch, settings, on_change, stop)
        with anyio.fail_after(10):
            await woken.wait()
        assert reasons == ["the watcher starting"]
        assert threading.active_count() == threads
        reasons.clear()
        with (aai / "history.db-wal").open("ab") as wal, (aai / "logs" / "gateway.log").open("ab") as line:
            for _ in range(200):
                wal.write(b"x" * 4096)
                wal.flush()
                line.write(b"a line\n")
                line.flush()
            await anyio.sleep(0.5)
            assert reasons == []  # written while open: nothing to rescan
        await anyio.sleep(0.5)
        assert reasons == []  # and closing files that are not descriptors is no change either

        descriptor = aai / "org.example.old" / "aai.json"
        assert await rescans_after(lambda: descriptor.write_text("{}")) == ["1 descriptor change(s)"]
        assert await rescans_after(lambda: descriptor.write_text('{"edited": true}'))
        assert await rescans_after(descriptor.unlink)
        assert await rescans_after((aai / "org.example.new").mkdir)
        assert await rescans_after(lambda: (aai / "org.example.new" / "aai.json").write_text("{}"))
        assert await rescans_after(lambda: (aai / "workflows" / "daily.json").write_text("{}"))
        stop.set()

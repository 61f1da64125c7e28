"""Which file-system events make the gateway rescan: descriptors and app folders, not its own files."""

from __future__ import annotations

import shutil
from pathlib import Path

from watchfiles import Change

from aai_gateway.discovery.watch import relevance


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

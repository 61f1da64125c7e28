"""`serve`'s lock file: held while the process lives, what a reader sees, and what a hostile file holds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aai_gateway.cli.running import LOCK_FILE, AlreadyRunning, Running, ServeLock, running


def test_a_held_lock_is_seen_and_refuses_a_second(tmp_path: Path) -> None:
    assert running(tmp_path) is None
    lock = ServeLock.acquire(tmp_path)
    try:
        assert running(tmp_path) == Running(os.getpid())
        lock.announce("http://127.0.0.1:5/mcp", None)
        assert running(tmp_path) == Running(os.getpid(), "http://127.0.0.1:5/mcp")
        with pytest.raises(AlreadyRunning, match=f"pid {os.getpid()}\\) already serves this AAI home at http"):
            ServeLock.acquire(tmp_path, attempts=1)
    finally:
        lock.release()
    assert running(tmp_path) is None
    assert (tmp_path / LOCK_FILE).read_text() == ""


@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b"[1, 2]", b'{"pid": "12", "url": 5}', b"\xff\xfe\x00", b'{"pid": 1}' + b" " * 200_000],
    ids=["empty", "text", "list", "wrong types", "binary", "large"],
)
def test_whatever_an_unlocked_file_holds_it_is_taken_over(tmp_path: Path, content: bytes) -> None:
    (tmp_path / LOCK_FILE).write_bytes(content)
    assert running(tmp_path) is None
    lock = ServeLock.acquire(tmp_path)
    try:
        assert json.loads((tmp_path / LOCK_FILE).read_text()) == {"pid": os.getpid(), "url": None, "ui": None}
    finally:
        lock.release()

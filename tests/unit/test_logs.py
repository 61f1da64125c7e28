"""A one-shot command keeps its terminal quiet while the log file still gets every call's line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from aai_gateway import logs


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    root = logging.getLogger("aai_gateway")
    saved = (list(root.handlers), root.level, root.propagate)
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])
    root.propagate = saved[2]


def test_stderr_level_quiets_the_terminal_but_not_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = logs.configure("info", tmp_path, stderr_level="warning")
    assert file is not None
    logger = logging.getLogger("aai_gateway.calls")
    logger.info("call abc123 cli app:tool ok")
    logger.warning("something to see")
    for handler in logging.getLogger("aai_gateway").handlers:
        handler.flush()
    written = file.read_text()
    assert "call abc123" in written
    assert "something to see" in written
    err = capsys.readouterr().err
    assert "call abc123" not in err
    assert "something to see" in err


def test_one_level_for_both_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure("debug", tmp_path)
    logging.getLogger("aai_gateway.x").debug("fine detail")
    assert "fine detail" in capsys.readouterr().err

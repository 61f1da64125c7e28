"""A one-shot command keeps its terminal quiet while the log file still gets every call's line."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from aai_gateway import logs, secret_forms


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    root = logging.getLogger("aai_gateway")
    saved = (list(root.handlers), root.level, root.propagate)
    yield
    logs.reset()
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


def test_the_file_rolls_over_by_size_and_keeps_counting_after_a_restart(tmp_path: Path) -> None:
    file = logs.configure("info", tmp_path)
    assert file is not None
    handler = next(h for h in logging.getLogger("aai_gateway").handlers if isinstance(h, logs.SizedRotatingFileHandler))
    handler.maxBytes = 10_000
    logger = logging.getLogger("aai_gateway.calls")
    for i in range(100):
        logger.info("call %04d %s", i, "x" * 100)  # ~160 bytes a line: about 60 lines a file
    handler.flush()
    rolled = tmp_path / (logs.LOG_FILE + ".1")
    assert rolled.exists()
    assert 9_000 < rolled.stat().st_size <= 10_000
    lines = rolled.read_text().splitlines() + file.read_text().splitlines()
    assert [line.split("call ")[1][:4] for line in lines] == [f"{i:04d}" for i in range(100)]
    size = file.stat().st_size

    logs.configure("info", tmp_path)  # a restart appends to the same file
    handler = next(h for h in logging.getLogger("aai_gateway").handlers if isinstance(h, logs.SizedRotatingFileHandler))
    handler.maxBytes = size + 200  # room for one line of ~150 bytes, not two
    logger.info("after the restart %s", "y" * 100)
    logger.info("and one more %s", "z" * 100)
    handler.flush()
    assert "and one more" in file.read_text()
    assert "after the restart" in rolled.read_text(), "the count went on from the file's size"


def test_each_record_is_formatted_once_for_every_handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs.configure("info", tmp_path)
    formatted: list[str] = []
    format_record = logging.Formatter.format

    def counting(self: logging.Formatter, record: logging.LogRecord) -> str:
        formatted.append(record.getMessage())
        return format_record(self, record)

    monkeypatch.setattr(logging.Formatter, "format", counting)
    logging.getLogger("aai_gateway.calls").info("call once")
    assert formatted == ["call once"]


def test_timestamps_are_the_stdlib_ones() -> None:
    mine, stdlib = logs.OnceFormatter(logs.FORMAT), logging.Formatter(logs.FORMAT)
    for created in (1_700_000_000.0, 1_700_000_000.999, 1_700_000_001.5, 1_700_000_001.0004, 1_600_000_000.25):
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "message", None, None)
        record.created, record.msecs = created, (created - int(created)) * 1000
        assert mine.formatTime(record) == stdlib.formatTime(record)
        assert mine.formatTime(record, "%H:%M") == stdlib.formatTime(record, "%H:%M")


def test_a_lean_record_is_formatted_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing"):
        monkeypatch.setattr(logging, name, getattr(logging, name))  # put back after the test
    written = logs.configure("info", tmp_path)
    assert written is not None
    logging.getLogger("aai_gateway.calls").info("before %s", "lean")
    logs.lean()
    logging.getLogger("aai_gateway.calls").info("after %s", "lean")
    lines = [line.split(" ", 2)[2] for line in written.read_text().splitlines()]
    assert lines == ["INFO aai_gateway.calls: before lean", "INFO aai_gateway.calls: after lean"]


def test_the_lines_after_a_turn_are_written_at_once_and_read_as_records_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    file = logs.configure("info", tmp_path)
    assert file is not None
    logger = logging.getLogger("aai_gateway.calls")
    logger.info("call %s as a record", "r1")
    handler = next(h for h in logging.getLogger("aai_gateway").handlers if isinstance(h, logs.SizedRotatingFileHandler))
    writes: list[str] = []
    write_text = logs.SizedRotatingFileHandler.write_text

    def counted(self: logs.SizedRotatingFileHandler, text: str, record: logging.LogRecord | None = None) -> None:
        writes.append(text)
        write_text(self, text, record)

    monkeypatch.setattr(logs.SizedRotatingFileHandler, "write_text", counted)
    monkeypatch.setattr(secret_forms, "_remembered_forms", ("s3cr3t-value",))

    async def main() -> None:
        for n in range(3):
            logs.after_turn(logger, "call %s ok in %.1f ms: %s", f"t{n}", 0.25, "with s3cr3t-value")
        assert writes == [], "written once the turn is over"
        await asyncio.sleep(0)
        logs.after_turn(logger, "call next turn")
        await asyncio.sleep(0)

    asyncio.run(main())
    handler.flush()
    assert len(writes) == 2, "one write a turn"
    lines = file.read_text().splitlines()
    assert [line.split(" ", 2)[2] for line in lines] == [
        "INFO aai_gateway.calls: call r1 as a record",
        *(f"INFO aai_gateway.calls: call t{n} ok in 0.2 ms: with {secret_forms.REDACTED}" for n in range(3)),
        "INFO aai_gateway.calls: call next turn",
    ]
    stamp = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")
    assert all(stamp.match(line) for line in lines)
    assert capsys.readouterr().err.count("INFO aai_gateway.calls: call t") == 3, "stderr too"


def test_lines_after_a_turn_keep_the_terminal_quiet_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = logs.configure("info", tmp_path, stderr_level="warning")
    assert file is not None

    async def main() -> None:
        logs.after_turn(logging.getLogger("aai_gateway.calls"), "call quiet")
        await asyncio.sleep(0)

    asyncio.run(main())
    assert "call quiet" in file.read_text()
    assert "call quiet" not in capsys.readouterr().err


def test_lines_after_a_turn_are_records_where_logging_is_not_the_gateways(caplog: pytest.LogCaptureFixture) -> None:
    logs.reset()
    caplog.set_level(logging.INFO, logger="aai_gateway.calls")

    async def main() -> None:
        logs.after_turn(logging.getLogger("aai_gateway.calls"), "call %s", "seen")
        await asyncio.sleep(0)

    asyncio.run(main())
    assert [r.getMessage() for r in caplog.records] == ["call seen"]

"""The calls journal: records committed on the event loop wait in a file beside the database, every reader
sees them, and they reach the calls table (once each) when counted, purged, read, or when the gateway stops
or starts again."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import sqlite3
import stat
import time
from contextlib import closing
from dataclasses import replace
from datetime import timedelta, timezone
from pathlib import Path

import pytest

from aai_gateway.descriptor import Tool
from aai_gateway.history import HistoryStore, Record, Recorder, Redactor, journal
from aai_gateway.history import writer as writer_module
from aai_gateway.history.redact import MASK
from aai_gateway.history.rows import COLUMNS, stored_row
from tests.history_runs import nowhere
from tests.support import committed_calls
from tests.unit.test_history_store import T0, make, store

__all__ = ["store"]  # the fixture, shared with the store's own tests


def calls_table(path: Path) -> list[str]:
    """The call ids in the calls table, in the order of their rows."""
    with closing(sqlite3.connect(path)) as conn:
        return [row[0] for row in conn.execute("SELECT id FROM calls ORDER BY seq")]


def in_journal(path: Path) -> list[str]:
    """The call ids waiting in the journal file and in files claimed from it."""
    in_table = set(calls_table(path))
    return [c["id"] for c in committed_calls(path) if c["id"] not in in_table]


SECONDS = itertools.count()


def write(store: HistoryStore, *ids: str) -> None:
    """Records of calls ending one by one, each a second after the last."""

    async def main() -> None:
        for call_id in ids:
            await store.write(make(call_id, T0 + timedelta(seconds=next(SECONDS))), alone=True)

    asyncio.run(main())


def test_a_record_is_committed_to_the_journal_and_every_query_sees_it(store: HistoryStore) -> None:
    write(store, "a", "b")
    assert (calls_table(store.path), in_journal(store.path)) == ([], ["a", "b"])
    assert stat.S_IMODE(journal.file_of(store.path).stat().st_mode) == 0o600, "readable by the user alone"
    assert store.get("b") is not None
    assert (calls_table(store.path), in_journal(store.path)) == (["a", "b"], []), "the reader moved it"
    write(store, "c")
    assert [r.call_id for r in store.query()] == ["c", "b", "a"]
    write(store, "d")
    assert store.count() == 4
    write(store, "e")
    assert [r.call_id for r in store.export()] == ["a", "b", "c", "d", "e"]
    write(store, "f")
    assert [e.record.call_id for e in store.entries()] == ["f", "e", "d", "c", "b", "a"]
    write(store, "g")
    found = store.stats(T0 - timedelta(hours=1), T0 + timedelta(hours=1))
    assert found.calls == 7
    assert calls_table(store.path) == ["a", "b", "c", "d", "e", "f", "g"]
    assert list(journal.file_of(store.path).with_name("history.journal.d").iterdir()) == [], "moved files go"


def test_the_writer_moves_the_journal_at_each_checkpoint_and_when_it_stops(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "CHECKPOINT_EVERY", 5)
    monkeypatch.setattr(writer_module, "MOST_WAITING", 5)  # calls that never pause
    ids = [f"r{n}" for n in range(12)]
    write(store, *ids)
    store.flush()
    calls = calls_table(store.path)
    assert len(calls) >= 5, "moved at the first checkpoint, five records in"
    assert sorted(calls + in_journal(store.path)) == sorted(ids)
    store.close()
    assert (calls_table(store.path), in_journal(store.path)) == (ids, [])


def test_the_writer_moves_the_journal_when_the_calls_pause_not_while_they_go_on(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "CHECKPOINT_EVERY", 5)
    monkeypatch.setattr(writer_module, "QUIET", 0.5)
    store.start()
    moved_while_busy: list[int] = []

    async def main() -> None:
        for n in range(40):  # a call every 20 ms: no pause of QUIET
            await store.write(make(f"b{n}", T0 + timedelta(seconds=next(SECONDS))), alone=True)
            await asyncio.sleep(0.02)
        moved_while_busy.append(len(calls_table(store.path)))
        await asyncio.sleep(1.5)  # the pause

    asyncio.run(main())
    assert moved_while_busy == [0], "35 records past CHECKPOINT_EVERY, none moved while calls went on"
    deadline = time.monotonic() + 10
    while len(calls_table(store.path)) < 40 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(calls_table(store.path)) == 40, "moved once the calls paused"
    assert in_journal(store.path) == []


def test_past_most_waiting_the_writer_moves_the_journal_though_calls_go_on(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "CHECKPOINT_EVERY", 5)
    monkeypatch.setattr(writer_module, "MOST_WAITING", 20)
    monkeypatch.setattr(writer_module, "QUIET", 60.0)
    store.start()
    write(store, *(f"m{n}" for n in range(19)))
    store.flush()
    assert calls_table(store.path) == [], "19 records wait for a pause"
    write(store, "m19")
    store.flush()
    assert len(calls_table(store.path)) == 20, "the twentieth record set the move off"


def test_a_journal_left_behind_is_moved_at_the_next_start_each_record_once(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    first = HistoryStore(path)
    write(first, "kept")
    first.close()
    # What a gateway killed after its writes leaves, and a mover killed after claiming a file: a record
    # twice, and one already in the calls table.
    journal.file_of(path).write_bytes(journal.encoded([make("late"), make("kept")]))
    claimed = tmp_path / "history.journal.d"
    claimed.mkdir(exist_ok=True)
    (claimed / "4242-left").write_bytes(journal.encoded([make("late"), make("later")]))
    second = HistoryStore(path)
    try:
        second.start()
        assert sorted(calls_table(path)) == ["kept", "late", "later"]
        assert in_journal(path) == []
        assert list(claimed.iterdir()) == []
        found = second.stats(T0 - timedelta(hours=1), T0 + timedelta(hours=1))
        assert found.calls == 3, "counted once each"
    finally:
        second.close()


def test_what_the_journal_table_of_schema_5_holds_is_moved_too(store: HistoryStore) -> None:
    store.start()
    with closing(sqlite3.connect(store.path)) as conn, conn:  # left by a gateway of the table's time
        conn.executemany(
            f"INSERT INTO calls_journal ({COLUMNS}) VALUES ({', '.join('?' * 17)})",  # noqa: S608
            [stored_row(make("from-the-table"))],
        )
    assert [r.call_id for r in store.query()] == ["from-the-table"]
    with closing(sqlite3.connect(store.path)) as conn:
        assert conn.execute("SELECT count(*) FROM calls_journal").fetchone()[0] == 0
        calls, kept = (
            [row[1:4] for row in conn.execute(f"PRAGMA table_info({table})")] for table in ("calls", "calls_journal")
        )
    assert kept == calls, "the table keeps the calls table's columns and constraints"


def test_calls_ending_in_one_turn_share_one_write_to_the_journal(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[int] = []
    real = os.write

    def counted(fd: int, data: bytes) -> int:
        if data.startswith(b"\n["):  # journal lines, not the event loop's own wake-ups
            writes.append(data.count(b"\n"))
        return real(fd, data)

    store.start()
    monkeypatch.setattr(os, "write", counted)

    async def main() -> None:
        await asyncio.gather(*(store.write(make(f"t{n}")) for n in range(20)))

    asyncio.run(main())
    monkeypatch.undo()
    assert writes == [20]
    assert (calls_table(store.path), sorted(in_journal(store.path))) == ([], sorted(f"t{n}" for n in range(20)))
    assert store.count() == 20


def test_records_appended_while_a_mover_claims_the_journal_land_once_each(store: HistoryStore) -> None:
    """The loop goes on writing in a new file once a mover has renamed the one it held open."""
    write(store, "before")
    with closing(sqlite3.connect(store.path, isolation_level=None)) as conn:
        with journal.folding(conn, store.path) as moved:
            assert moved == 1
            write(store, "during")  # the file the loop holds was claimed: it opens the new one
        assert calls_table(store.path) == ["before"]
    write(store, "after")
    assert in_journal(store.path) == ["during", "after"]
    assert [r.call_id for r in store.export()] == ["before", "during", "after"]


def test_a_journal_deleted_while_the_gateway_runs_is_begun_again(store: HistoryStore) -> None:
    write(store, "a")
    journal.file_of(store.path).unlink()  # "a" is lost with it, as with any file deleted
    write(store, "b")
    assert in_journal(store.path) == ["b"]
    assert [r.call_id for r in store.query()] == ["b"]


def test_a_line_cut_short_is_skipped_and_said_and_the_rest_moved(
    store: HistoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    write(store, "whole")
    with journal.file_of(store.path).open("ab") as file:  # a write cut short by a full disk, then others
        file.write(journal.encoded([make("cut")])[:40])
        file.write(b"\n" + json.dumps(["not", "a", "row"]).encode())
        hostile = list(stored_row(make("hostile")))
        hostile[6] = {"args": "as an object, not text"}
        file.write(b"\n" + json.dumps(hostile).encode())
    write(store, "next")
    with caplog.at_level(logging.WARNING, "aai_gateway.history.journal"):
        assert [r.call_id for r in store.export()] == ["whole", "next"]
    assert "3 line(s) of the call journal were not call records" in caplog.text


def test_a_reader_that_cannot_move_the_journal_reads_what_the_calls_table_holds(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(store, "a")
    assert store.count() == 1
    write(store, "b")

    def refused(conn: sqlite3.Connection, database: Path) -> object:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(journal, "folding", refused)
    assert [r.call_id for r in store.query()] == ["a"]
    assert (calls_table(store.path), in_journal(store.path)) == (["a"], ["b"])


@pytest.mark.hostile("history")
@pytest.mark.parametrize("what", ["link", "folder"])
def test_a_journal_path_that_is_no_file_leaves_the_records_to_the_writer_thread(
    store: HistoryStore, tmp_path: Path, what: str
) -> None:
    """A link at the journal's path is not followed (nor moved), a folder not moved: the records still land."""
    target = tmp_path / "elsewhere.txt"
    target.write_text("not the history's\n")
    path = journal.file_of(store.path)
    store.start()
    if what == "link":
        path.symlink_to(target)
    else:
        path.mkdir()
    write(store, "a", "b")
    store.flush()
    assert [r.call_id for r in store.query()] == ["b", "a"]
    assert target.read_text() == "not the history's\n"
    assert path.is_symlink() if what == "link" else path.is_dir()


@pytest.mark.parametrize(
    "record",
    [
        make("plain"),
        make(
            "odd \u2028 é",
            args={"k": ["x", 1.5, None, True, {"ü": "\ud800 half"}], "": 'quoted " and \\'},
            status="error",
            error_code=-32001,
            error_type="TIMEOUT",
            error_detail="late \n again",
            result=None,
            result_truncated=True,
            consent="once",
            parent="run-1",
            step="notify[2]",
        ),
        make("at-an-offset", T0.astimezone(timezone(timedelta(hours=-5))), args=[], duration_ms=0.0),
    ],
)
def test_a_line_whose_start_was_worked_out_early_is_the_line_of_the_whole_record(record: Record) -> None:
    early = replace(record, encoded_head=journal.encoded_head(record))
    line = journal.encoded([early])
    assert line == journal.encoded([record])
    assert tuple(json.loads(line.decode("utf-8", "surrogatepass"))) == stored_row(record)


def test_a_call_prepared_while_its_app_works_is_committed_redacted(store: HistoryStore) -> None:
    """`Recorder.prepare` redacts the arguments and starts the journal line before the call ends; the
    row committed is the one a call without it gets."""
    schema = {"type": "object", "properties": {"pin": {"type": "string", "x-sensitive": True}}}
    tool = Tool(name="unlock", description="", parameters=schema)
    recorder = Recorder(store, Redactor(), nowhere)

    async def run() -> None:
        for call_id, early in (("early", True), ("late", False)):
            pending = recorder.begin(
                call_id, caller="c", transport="stdio", app="x", tool="unlock", args={"pin": "4711"}
            )
            if early:
                recorder.prepare(pending, tool)
                assert pending.early is not None
            await recorder.ok(pending, {"echo": "pin 4711"}, 2.5, tool=tool)

    asyncio.run(run())
    prepared, plain = store.get("early"), store.get("late")
    assert prepared is not None
    assert plain is not None
    assert prepared.args == {"pin": MASK}
    assert "4711" not in (prepared.result or "")
    assert replace(prepared, call_id="late", time=plain.time) == plain

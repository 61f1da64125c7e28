"""The calls journal: records committed on the event loop wait there, every reader sees them, and they reach
the calls table (once each) when counted, purged, read, or when the gateway stops or starts again."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.history import HistoryStore, journal
from aai_gateway.history import writer as writer_module
from aai_gateway.history.rows import stored_row
from tests.unit.test_history_store import T0, make, store

__all__ = ["store"]  # the fixture, shared with the store's own tests


def tables(path: Path) -> tuple[list[str], list[str]]:
    """The call ids in the calls table and in the journal, each in the order of their rows."""
    with closing(sqlite3.connect(path)) as conn:
        calls = [row[0] for row in conn.execute("SELECT id FROM calls ORDER BY seq")]
        waiting = [row[0] for row in conn.execute("SELECT id FROM calls_journal ORDER BY seq")]
    return calls, waiting


SECONDS = itertools.count()


def write(store: HistoryStore, *ids: str) -> None:
    """Records of calls ending one by one, each a second after the last."""

    async def main() -> None:
        for call_id in ids:
            await store.write(make(call_id, T0 + timedelta(seconds=next(SECONDS))), alone=True)

    asyncio.run(main())


def test_a_record_is_committed_to_the_journal_and_every_query_sees_it(store: HistoryStore) -> None:
    write(store, "a", "b")
    assert tables(store.path) == ([], ["a", "b"])
    assert store.get("b") is not None
    assert tables(store.path) == (["a", "b"], []), "the reader moved the journal into the calls table"
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
    assert tables(store.path) == (["a", "b", "c", "d", "e", "f", "g"], [])


def test_the_writer_moves_the_journal_at_each_checkpoint_and_when_it_stops(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "CHECKPOINT_EVERY", 5)
    ids = [f"r{n}" for n in range(12)]
    write(store, *ids)
    store.flush()
    calls, waiting = tables(store.path)
    assert len(calls) >= 5, "moved at the first checkpoint, five records in"
    assert calls + waiting == ids
    store.close()
    assert tables(store.path) == (ids, [])


def test_a_journal_left_behind_is_moved_at_the_next_start_each_record_once(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    first = HistoryStore(path)
    write(first, "kept")
    first.close()
    with closing(sqlite3.connect(path)) as conn, conn:  # what a gateway killed after its commits leaves
        rows = [stored_row(make(call_id)) for call_id in ("kept", "late", "late")]
        conn.executemany(journal.INSERT, rows)
    second = HistoryStore(path)
    try:
        second.start()
        assert tables(path) == (["kept", "late"], [])
        found = second.stats(T0 - timedelta(hours=1), T0 + timedelta(hours=1))
        assert found.calls == 2, "counted once each"
    finally:
        second.close()


def test_calls_ending_in_one_turn_share_one_commit_to_the_journal(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    commits: list[int] = []
    insert = writer_module._insert

    def counted(conn: sqlite3.Connection, records: list[Any]) -> None:
        commits.append(len(records))
        insert(conn, records)

    monkeypatch.setattr(writer_module, "_insert", counted)
    store.start()

    async def main() -> None:
        await asyncio.gather(*(store.write(make(f"t{n}")) for n in range(20)))

    asyncio.run(main())
    assert commits == [20]
    calls, waiting = tables(store.path)
    assert (calls, sorted(waiting)) == ([], sorted(f"t{n}" for n in range(20)))
    assert store.count() == 20


def test_a_reader_that_cannot_move_the_journal_reads_what_the_calls_table_holds(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(store, "a")
    assert store.count() == 1
    write(store, "b")

    def refused(conn: sqlite3.Connection) -> int:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(journal, "fold", refused)
    assert [r.call_id for r in store.query()] == ["a"]
    assert tables(store.path) == (["a"], ["b"])


def test_the_journal_has_the_columns_of_the_calls_table(store: HistoryStore) -> None:
    store.start()
    with closing(sqlite3.connect(store.path)) as conn:
        calls, kept = (
            [row[1:4] for row in conn.execute(f"PRAGMA table_info({table})")] for table in ("calls", "calls_journal")
        )
    assert kept == calls

from __future__ import annotations

import asyncio
import json
import sqlite3
import stat
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.history import HistoryStore, HistoryUnavailable, Record, parse_time, schema
from aai_gateway.history import journal as journal_module
from aai_gateway.history import writer as writer_module
from aai_gateway.history.store import SCHEMA_VERSION
from tests.support import committed_calls, wait_until

T0 = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)


def make(call_id: str, at: datetime = T0, **changes: Any) -> Record:
    fields: dict[str, Any] = {
        "call_id": call_id,
        "time": at,
        "caller": "claude-code",
        "transport": "stdio",
        "app": "dev.aai.echo",
        "tool": "echo",
        "args": {"text": "hi"},
        "status": "ok",
        "duration_ms": 1.25,
        "result": '"hi"',
    }
    fields.update(changes)
    return Record(**fields)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HistoryStore]:
    history = HistoryStore(tmp_path / "aai" / "history.db", retention_days=36500)
    try:
        yield history
    finally:
        history.close()


def test_created_on_first_use_in_wal_mode_with_a_schema_version(store: HistoryStore) -> None:
    assert not store.path.exists()
    assert store.query() == []
    assert store.count() == 0
    assert store.get("nope") is None
    assert not store.path.exists(), "reading must not create the database"
    store.start()
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "calls" in tables


def test_round_trip(store: HistoryStore) -> None:
    ok = make("a1", args={"text": "héllo", "n": [1, 2.5, None, True]}, result='{"x": 1}', result_truncated=True)
    failed = make(
        "b2",
        at=T0 + timedelta(seconds=1),
        status="error",
        error_code=-32005,
        error_type="INVALID_PARAMS",
        error_detail="args.text: required",
        result=None,
    )
    asyncio.run(store.write(ok))
    store.submit(failed).result(10)
    assert store.get("a1") == ok
    assert store.get("b2") == failed
    assert store.get("b2") is not None
    assert failed.to_json() == {
        "id": "b2",
        "time": "2030-05-01T12:00:01.000+00:00",
        "caller": "claude-code",
        "transport": "stdio",
        "app": "dev.aai.echo",
        "tool": "echo",
        "args": {"text": "hi"},
        "status": "error",
        "error": {"code": -32005, "type": "INVALID_PARAMS", "detail": "args.text: required"},
        "durationMs": 1.25,
        "result": None,
        "resultTruncated": False,
        "consent": None,
        "parent": None,
        "step": None,
    }
    assert ok.to_json()["error"] is None


def test_filters_and_order(store: HistoryStore) -> None:
    records = [
        make("r0", T0, app="a", tool="x", caller="c1"),
        make("r1", T0 + timedelta(minutes=1), app="a", tool="y", caller="c2", status="error", result=None),
        make("r2", T0 + timedelta(minutes=2), app="b", tool="x", caller="c1"),
        make("r3", T0 + timedelta(minutes=3), app="b", tool="y", caller="c2", status="error", result=None),
        make("r4", T0 + timedelta(minutes=3), app="a", tool="x", caller="c1"),
    ]
    for record in records:
        store.submit(record)
    store.flush(10)

    def ids(**filters: Any) -> list[str]:
        return [r.call_id for r in store.query(**filters)]

    assert ids() == ["r4", "r3", "r2", "r1", "r0"], "newest first; same time: later write first"
    assert ids(app="a") == ["r4", "r1", "r0"]
    assert ids(app="a", tool="x") == ["r4", "r0"]
    assert ids(status="error") == ["r3", "r1"]
    assert ids(caller="c1", status="ok") == ["r4", "r2", "r0"]
    assert ids(since=T0 + timedelta(minutes=2)) == ["r4", "r3", "r2"]
    assert ids(until=T0 + timedelta(minutes=1)) == ["r1", "r0"]
    assert ids(since=T0 + timedelta(minutes=1), until=T0 + timedelta(minutes=2)) == ["r2", "r1"]
    assert ids(since=T0.astimezone(timezone(timedelta(hours=2))) + timedelta(minutes=2)) == ["r4", "r3", "r2"]
    assert ids(since=T0.replace(tzinfo=None) + timedelta(minutes=3)) == ["r4", "r3"], "naive means UTC"
    assert ids(limit=2) == ["r4", "r3"]
    assert ids(limit=2, offset=2) == ["r2", "r1"]
    assert ids(limit=None, offset=4) == ["r0"]
    assert ids(app="nope") == []
    assert store.count() == 5
    assert store.count(app="b", status="error") == 1
    assert store.count(since=T0 + timedelta(minutes=3)) == 2
    with pytest.raises(ValueError, match="status must be one of ok, error"):
        store.query(status="failed")
    with pytest.raises(ValueError, match="limit"):
        store.query(limit=-1)


def test_retention_deletes_old_records_at_start_and_on_purge(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    now = datetime.now(UTC)
    keep_all = HistoryStore(path, retention_days=36500)
    keep_all.submit(make("old", now - timedelta(days=31)))
    keep_all.submit(make("edge", now - timedelta(days=29)))
    keep_all.submit(make("new", now))
    keep_all.close()
    assert HistoryStore(path).count() == 3

    thirty = HistoryStore(path, retention_days=30)
    thirty.start()
    assert [r.call_id for r in thirty.query()] == ["new", "edge"]
    thirty.submit(make("stale", now - timedelta(days=40)))
    thirty.flush(10)
    assert thirty.count() == 3, "a write does not purge by itself"
    assert thirty.purge() == 1
    assert [r.call_id for r in thirty.query()] == ["new", "edge"]
    thirty.close()

    short = HistoryStore(path, retention_days=0.5)
    short.start()
    assert short.purge() == 0, "start purged already"
    assert [r.call_id for r in short.query()] == ["new"]
    short.close()


def test_old_records_are_purged_periodically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "PURGE_EVERY", 0.05)
    history = HistoryStore(tmp_path / "history.db", retention_days=1)
    try:
        history.start()
        history.submit(make("aged", datetime.now(UTC) - timedelta(days=2))).result(10)
        history.submit(make("fresh", datetime.now(UTC))).result(10)
        wait_until(lambda: history.count() == 1, 30, "the periodic purge")
        assert [r.call_id for r in history.query()] == ["fresh"]
    finally:
        history.close()


def test_a_newer_schema_is_refused_for_writing_and_reading(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    store = HistoryStore(path)
    with pytest.raises(HistoryUnavailable, match="schema 99, newer"):
        store.start()
    with pytest.raises(HistoryUnavailable, match="schema 99, newer"):
        store.submit(make("x")).result(10)
    with pytest.raises(HistoryUnavailable, match="schema 99"):
        store.query()
    store.close()


def test_an_unwritable_place_fails_each_write_without_stopping_the_writer(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = HistoryStore(blocker / "history.db")
    with pytest.raises(HistoryUnavailable):
        store.submit(make("x")).result(10)
    with pytest.raises(HistoryUnavailable):
        store.submit(make("y")).result(10)
    store.close()


def test_writes_from_many_threads_are_all_kept(store: HistoryStore) -> None:
    def writer(n: int) -> None:
        futures = [store.submit(make(f"t{n}-{i}", T0 + timedelta(milliseconds=i))) for i in range(50)]
        for future in futures:
            future.result(30)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.count() == 1000
    assert len({r.call_id for r in store.query(limit=None)}) == 1000


def test_closed_store_starts_again_and_reads_while_writing(store: HistoryStore) -> None:
    store.submit(make("before")).result(10)
    store.close()
    store.close()
    store.submit(make("after")).result(10)
    assert [r.call_id for r in store.query()] == ["after", "before"]


def test_values_that_are_not_json_are_kept_as_text(store: HistoryStore) -> None:
    store.submit(make("odd", args={"when": T0, "raw": b"\x00"})).result(10)
    found = store.get("odd")
    assert found is not None
    assert found.args == {"when": "2030-05-01 12:00:00+00:00", "raw": "b'\\x00'"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2030-05-01", datetime(2030, 5, 1, tzinfo=UTC)),
        ("2030-05-01T14:30", datetime(2030, 5, 1, 14, 30, tzinfo=UTC)),
        ("2030-05-01T14:30Z", datetime(2030, 5, 1, 14, 30, tzinfo=UTC)),
        ("2030-05-01T14:30:00+02:00", datetime(2030, 5, 1, 12, 30, tzinfo=UTC)),
        ("30m", T0 - timedelta(minutes=30)),
        ("2h", T0 - timedelta(hours=2)),
        ("7d", T0 - timedelta(days=7)),
        ("1w", T0 - timedelta(weeks=1)),
        ("90s", T0 - timedelta(seconds=90)),
        (" 1.5H ", T0 - timedelta(minutes=90)),
    ],
)
def test_parse_time(text: str, expected: datetime) -> None:
    assert parse_time(text, now=T0) == expected


@pytest.mark.parametrize("text", ["yesterday", "", "5 parsecs", "2030-13-01", "-2h", "99999999999999d"])
def test_parse_time_refuses(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected an ISO date|reaches back"):
        parse_time(text, now=T0)


def test_writes_on_the_event_loop_commit_there_and_checkpoint_on_the_writer(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "CHECKPOINT_EVERY", 100)
    monkeypatch.setattr(writer_module, "MOST_WAITING", 100)  # calls that never pause
    store.start()
    jobs: list[str] = []
    submit = store._submit

    def counted(kind: str, record: Record | None = None) -> Any:
        jobs.append(kind)
        return submit(kind, record)

    monkeypatch.setattr(store, "_submit", counted)

    async def main() -> None:
        for start in range(0, 250, 50):  # in bursts, as calls in flight end together
            await asyncio.gather(
                *(store.write(make(f"w{i}", T0 + timedelta(milliseconds=i))) for i in range(start, start + 50))
            )
            await asyncio.to_thread(store.flush)  # a commit meeting a checkpoint goes to the writer instead

    asyncio.run(main())
    assert store.count() == 250
    assert "record" not in jobs, "records are committed on the loop"
    assert jobs.count("checkpoint") == 2, "the writer thread checkpoints every CHECKPOINT_EVERY records"


class Busy:
    """Another process holding the database's write lock until `release`; with `journal_too`, a journal that
    cannot be written either (a folder where its file should be), so records go to the writer thread."""

    def __init__(self, store: HistoryStore, *, journal_too: bool = True) -> None:
        store.start()
        if journal_too:
            journal_module.file_of(store.path).mkdir()
        self.database = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
        self.database.execute("BEGIN IMMEDIATE")
        self.released = threading.Event()
        self._releasing = threading.Lock()

    def release(self) -> None:
        with self._releasing:
            if not self.released.is_set():
                self.database.execute("COMMIT")
                self.released.set()

    def close(self) -> None:
        self.release()
        self.database.close()


@pytest.mark.parametrize("alone", [False, True])
def test_a_write_does_not_wait_for_another_process_holding_the_database(store: HistoryStore, alone: bool) -> None:
    """The journal is a file: a call's record is committed while another process holds the database's
    write lock, and is in the calls table once the reader after it can move it."""
    other = Busy(store, journal_too=False)
    try:
        asyncio.run(asyncio.wait_for(store.write(make("meanwhile"), alone=alone), 5))
        assert [c["id"] for c in committed_calls(store.path)] == ["meanwhile"]
    finally:
        other.close()
    assert [r.call_id for r in store.query()] == ["meanwhile"]


@pytest.mark.parametrize("alone", [False, True])
def test_a_write_the_journal_refuses_waits_for_the_database_on_the_writer_thread(
    store: HistoryStore, alone: bool
) -> None:
    """A record the journal cannot take, while another process holds the database, must neither fail nor
    stall the event loop: the writer thread commits it once the database is free."""
    busy = Busy(store)

    async def main() -> None:
        # A store that blocked the loop would never let it release the lock: this timer would, and the
        # assertion below would then fail instead of the test hanging.
        safety = threading.Timer(30, busy.release)
        safety.start()
        try:
            writing = asyncio.create_task(store.write(make("waited"), alone=alone))
            for _ in range(20):
                await asyncio.sleep(0)
                assert not writing.done(), "the record cannot be committed while the lock is held"
            assert not busy.released.is_set(), "the event loop went on while the record waited for the lock"
            busy.release()
            await writing
        finally:
            safety.cancel()

    try:
        asyncio.run(main())
    finally:
        busy.close()
    assert [r.call_id for r in store.query()] == ["waited"]
    assert store.count() == 1


@pytest.mark.parametrize("alone", [False, True])
def test_a_write_cancelled_while_it_waits_for_the_database_is_committed_all_the_same(
    store: HistoryStore, alone: bool
) -> None:
    """The caller giving up (a cancelled call) must not drop the record handed to the writer thread."""
    busy = Busy(store)

    async def main() -> None:
        writing = asyncio.create_task(store.write(make("given-up"), alone=alone))
        for _ in range(5):  # the loop's own attempt fails at once and hands the record to the writer thread
            await asyncio.sleep(0)
        assert not writing.done(), "the record waits for the lock on the writer thread"
        writing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await writing

    try:
        asyncio.run(main())
    finally:
        busy.close()
    store.flush(10)
    assert [r.call_id for r in store.query()] == ["given-up"]


@pytest.mark.parametrize("alone", [False, True])
def test_a_write_on_the_loop_reports_an_unwritable_place(tmp_path: Path, alone: bool) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = HistoryStore(blocker / "history.db")

    async def main() -> None:
        await store.write(make("x"), alone=alone)

    with pytest.raises(HistoryUnavailable):
        asyncio.run(main())
    store.close()


def test_a_call_alone_is_committed_before_its_write_returns(store: HistoryStore) -> None:
    store.start()
    seen: list[int] = []

    async def main() -> None:
        for i in range(3):
            await store.write(make(f"alone{i}"), alone=True)
            seen.append(len(committed_calls(store.path)))

    asyncio.run(main())
    assert seen == [1, 2, 3]


def test_the_write_ahead_log_does_not_grow_under_a_steady_stream_of_calls(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checkpoints that cannot catch up with the commits would let the log grow with every call."""
    monkeypatch.setattr(writer_module, "CHECKPOINT_EVERY", 50)
    monkeypatch.setattr(writer_module, "MOST_WAITING", 50)  # calls that never pause
    monkeypatch.setattr(writer_module, "WAL_LIMIT", 256 * 1024)
    store.start()
    wal = Path(f"{store.path}-wal")
    sizes: list[int] = []

    async def main() -> None:
        for start in range(0, 6000, 8):  # calls ending a few at a time, without a pause
            await asyncio.gather(
                *(store.write(make(f"s{i}", T0 + timedelta(milliseconds=i))) for i in range(start, start + 8))
            )
            if start % 1000 == 0:
                sizes.append(wal.stat().st_size)

    asyncio.run(main())
    store.flush()
    assert store.count() == 6000
    assert max(sizes) < 2 * 1024 * 1024, sizes
    store._submit("checkpoint").result()
    asyncio.run(store.write(make("last")))
    store._submit("checkpoint").result()  # its move of the journal is the first write after the last
    assert wal.stat().st_size <= 256 * 1024, "a checkpoint lets the log start over, cut back to WAL_LIMIT"


@pytest.mark.hostile("history")
def test_records_that_cannot_be_written_wait_in_memory_bounded_and_are_written_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(writer_module, "MAX_WAITING", 10)
    blocker = tmp_path / "aai"
    blocker.write_text("a file where the folder should be")
    history = HistoryStore(blocker / "history.db")
    try:
        for i in range(12):
            with pytest.raises(HistoryUnavailable, match="File exists"):
                history.submit(make(f"c{i:02}", T0 + timedelta(seconds=i))).result(10)
        trouble = history.trouble()
        assert trouble is not None
        assert (trouble.waiting, trouble.dropped) == (10, 2)
        assert "10 record(s) wait in memory, 2 dropped (the oldest)" in trouble.describe()
        assert history.reported_trouble() == trouble
        assert "call record(s) dropped so far, the oldest: at most 10 wait in memory" in caplog.text

        blocker.unlink()
        history.flush(10)
        assert history.trouble() is None
        assert history.reported_trouble() is None
        assert [r.call_id for r in history.query()] == [f"c{i:02}" for i in range(11, 1, -1)]
    finally:
        history.close()


def test_a_full_rollback_reports_the_error_itself(tmp_path: Path) -> None:
    """SQLite ends the transaction itself on SQLITE_FULL: the error given is that, not the failed ROLLBACK."""
    history = HistoryStore(tmp_path / "history.db")
    history.start()
    history.close()
    conn = sqlite3.connect(tmp_path / "history.db", isolation_level=None)
    try:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        big = [make(f"big{i}", result="x" * 50_000) for i in range(20)]
        with pytest.raises(sqlite3.Error) as caught:
            writer_module._insert(conn, big)
        assert "full" in str(caught.value)
        assert schema.reason(caught.value, tmp_path).startswith("disk full")
    finally:
        conn.close()


def test_a_status_left_by_an_ended_gateway_is_told_then_cleared_by_the_next(tmp_path: Path) -> None:
    history = HistoryStore(tmp_path / "history.db")
    dead = 2**22 + 1  # above the usual pid_max: no process has it
    status = history.status_files[0]
    status.write_text(json.dumps({"reason": "disk full", "since": "then", "waiting": 3, "dropped": 0, "pid": dead}))
    told = history.reported_trouble()
    assert told is not None
    assert (told.reason, told.waiting, told.pid) == ("disk full", 3, dead)
    history.start()
    history.close()
    assert not status.exists()
    assert history.reported_trouble() is None

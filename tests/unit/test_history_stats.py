"""Usage statistics against histories whose numbers are known: exact counts, p50/p95, error types, callers,
consent questions; every range (whole hours, partial hours, within one hour) against a count of the records,
with calls in the hourly counts and calls not counted yet; deleting old records and migrating a version 1
history keep the hourly counts exact."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import math
import random
import sqlite3
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.history import HistoryStore, Record, reader, rows, writer
from aai_gateway.history import store as store_module
from aai_gateway.history.export import lines
from aai_gateway.history.record import iso
from aai_gateway.history.stats import TOP, Stats, percentile_rank

T0 = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)


def make(call_id: str, at: datetime, **changes: Any) -> Record:
    fields: dict[str, Any] = {
        "call_id": call_id,
        "time": at,
        "caller": "c1",
        "transport": "stdio",
        "app": "a",
        "tool": "x",
        "args": {"text": "hi"},
        "status": "ok",
        "duration_ms": 1.0,
        "result": '"hi"',
    }
    fields.update(changes)
    return Record(**fields)


def fail(call_id: str, at: datetime, kind: str, **changes: Any) -> Record:
    return make(
        call_id, at, status="error", error_code=-32000, error_type=kind, error_detail="no", result=None, **changes
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HistoryStore]:
    history = HistoryStore(tmp_path / "history.db", retention_days=36500)
    try:
        yield history
    finally:
        history.close()


def write(store: HistoryStore, records: list[Record]) -> None:
    for record in records:
        store.submit(record)
    store.flush(30)


def known() -> list[Record]:
    """a:x 100 calls over two days, durations 1..100 ms, 8 failing; b:y 10 calls, 10..100 ms, 2 failing."""
    records = []
    for n in range(100):
        at = T0 + timedelta(minutes=29 * n)  # 12:00 on day 1 to 11:51 on day 3
        caller = "c1" if n % 4 else "c2"
        if n < 5:
            records.append(fail(f"x{n}", at, "TIMEOUT", caller=caller, duration_ms=float(n + 1)))
        elif n < 8:
            records.append(fail(f"x{n}", at, "INVALID_PARAMS", caller=caller, duration_ms=float(n + 1)))
        else:
            consent = {10: "once", 11: "never", 12: "unanswered"}.get(n)
            records.append(make(f"x{n}", at, caller=caller, duration_ms=float(n + 1), consent=consent))
    for n in range(10):
        at = T0 + timedelta(hours=5 * n, minutes=7)
        status = {"app": "b", "tool": "y", "caller": "c3", "duration_ms": 10.0 * (n + 1)}
        records.append(fail(f"y{n}", at, "APP_NOT_RUNNING", **status) if n in (3, 4) else make(f"y{n}", at, **status))
    return records


def test_known_numbers_over_the_whole_history(store: HistoryStore) -> None:
    write(store, known())
    assert store.purge() == 0  # deletes nothing (a retention of a century) but counts every call per hour
    found = store.stats(T0, T0 + timedelta(days=3))
    assert (found.calls, found.errors, found.bucket) == (110, 10, "day")
    assert found.buckets == ("2030-05-01", "2030-05-02", "2030-05-03", "2030-05-04")
    assert [(a.name, a.calls, a.errors) for a in found.apps] == [("a", 100, 8), ("b", 10, 2)]
    x, y = found.tools
    # from the hourly sketches: within 1 % of the exact percentiles
    assert (x.app, x.tool, x.calls, x.errors) == ("a", "x", 100, 8)
    assert (x.p50_ms, x.p95_ms, x.p99_ms) == pytest.approx((50.0, 95.0, 99.0), rel=0.01)
    assert (y.app, y.tool, y.calls, y.errors) == ("b", "y", 10, 2)
    assert (y.p50_ms, y.p95_ms, y.p99_ms) == pytest.approx((50.0, 100.0, 100.0), rel=0.01)
    every = found.durations
    assert (every.p50_ms, every.p95_ms, every.p99_ms) == pytest.approx((50.0, 95.0, 100.0), rel=0.01)
    assert [(e.app, e.tool, e.error_type, e.count) for e in found.error_kinds] == [
        ("a", "x", "TIMEOUT", 5),
        ("a", "x", "INVALID_PARAMS", 3),
        ("b", "y", "APP_NOT_RUNNING", 2),
    ]
    assert [(c.name, c.calls, c.errors) for c in found.callers] == [("c1", 75, 6), ("c2", 25, 2), ("c3", 10, 2)]
    assert (found.consent.asked, found.consent.answered) == (3, 2)
    assert found.consent.outcomes == {"once": 1, "never": 1, "unanswered": 1}
    day1 = found.per_bucket["2030-05-01"]
    # a:x every 29 minutes from 12:00: 25 calls up to 23:36 on the first day; b:y at 12:07, 17:07, 22:07
    assert (day1["a"].calls, day1["a"].errors, day1["b"].calls) == (25, 8, 3)
    document = found.to_json()
    assert document["calls"] == 110
    assert document["tools"][0] == {
        "app": "a",
        "tool": "x",
        "calls": 100,
        "errors": 8,
        "errorRate": 0.08,
        "p50Ms": pytest.approx(50.0, rel=0.01),
        "p95Ms": pytest.approx(95.0, rel=0.01),
        "p99Ms": pytest.approx(99.0, rel=0.01),
    }
    assert document["durations"] == {
        "p50Ms": pytest.approx(50.0, rel=0.01),
        "p95Ms": pytest.approx(95.0, rel=0.01),
        "p99Ms": pytest.approx(100.0, rel=0.01),
    }
    assert document["consent"] == {"asked": 3, "answered": 2, "outcomes": {"never": 1, "once": 1, "unanswered": 1}}


def test_filters_and_a_range_within_one_hour(store: HistoryStore) -> None:
    write(store, known())
    only_b = store.stats(T0, T0 + timedelta(days=3), app="b")
    assert [(a.name, a.calls) for a in only_b.apps] == [("b", 10)]
    assert [c.name for c in only_b.callers] == ["c3"]
    only_x = store.stats(T0, T0 + timedelta(days=3), tool="x")
    assert (only_x.calls, [c.calls for c in only_x.callers]) == (100, [75, 25])
    # 12:00, 12:29 and 12:58 of a:x (1, 2 and 3 ms), 12:07 of b:y
    hour = store.stats(T0, T0 + timedelta(minutes=59))
    assert (hour.bucket, hour.calls, hour.buckets) == ("hour", 4, ("2030-05-01T12",))
    # no whole hour: exact, from the calls
    assert [(t.tool, t.p50_ms, t.p95_ms, t.p99_ms) for t in hour.tools] == [
        ("x", 2.0, 3.0, 3.0),
        ("y", 10.0, 10.0, 10.0),
    ]
    assert (hour.durations.p50_ms, hour.durations.p99_ms) == (2.0, 10.0)


def test_an_empty_or_absent_history(store: HistoryStore, tmp_path: Path) -> None:
    absent = HistoryStore(tmp_path / "none" / "history.db").stats(T0, T0 + timedelta(days=1))
    assert (absent.calls, absent.tools, absent.consent.asked) == (0, (), 0)
    write(store, known())
    later = store.stats(T0 + timedelta(days=10), T0 + timedelta(days=11))
    assert (later.calls, later.apps, later.callers, later.error_kinds) == (0, (), (), ())
    with pytest.raises(ValueError, match="later than until"):
        store.stats(T0 + timedelta(days=1), T0)


def test_percentile_ranks_are_nearest_rank() -> None:
    assert [percentile_rank(n, 0.5) for n in (1, 2, 3, 4, 100)] == [0, 0, 1, 1, 49]
    assert [percentile_rank(n, 0.95) for n in (1, 2, 20, 21, 100)] == [0, 1, 18, 19, 94]


def expected(records: list[Record], since: datetime, until: datetime, **only: str) -> dict[str, Any]:
    chosen = [r for r in records if since <= r.time <= until and all(getattr(r, k) == v for k, v in only.items())]
    tools: dict[tuple[str, str], list[Record]] = {}
    for r in chosen:
        tools.setdefault((r.app, r.tool), []).append(r)

    def pct(rs: list[Record], fraction: float) -> Any:
        durations = sorted(r.duration_ms for r in rs)
        return pytest.approx(durations[max(0, math.ceil(fraction * len(durations)) - 1)], rel=0.01)

    return {
        "calls": len(chosen),
        "errors": sum(r.status == "error" for r in chosen),
        "apps": Counter(r.app for r in chosen),
        "tools": {
            k: (len(v), sum(r.status == "error" for r in v), pct(v, 0.5), pct(v, 0.95), pct(v, 0.99))
            for k, v in tools.items()
        },
        "durations": tuple(pct(chosen, f) for f in (0.5, 0.95, 0.99)) if chosen else (None, None, None),
        "kinds": top(Counter((r.app, r.tool, r.error_type) for r in chosen if r.status == "error")),
        "callers": Counter(r.caller for r in chosen),
        "consent": Counter(r.consent for r in chosen if r.consent is not None),
    }


def top(counts: Counter[Any]) -> Counter[Any]:
    """The TOP most common, ties in order of their keys, as the statistics rank them."""
    return Counter(dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]))


def observed(found: Stats) -> dict[str, Any]:
    return {
        "calls": found.calls,
        "errors": found.errors,
        "apps": Counter({a.name: a.calls for a in found.apps}),
        "tools": {(t.app, t.tool): (t.calls, t.errors, t.p50_ms, t.p95_ms, t.p99_ms) for t in found.tools},
        "durations": (found.durations.p50_ms, found.durations.p95_ms, found.durations.p99_ms),
        "kinds": Counter({(e.app, e.tool, e.error_type): e.count for e in found.error_kinds}),
        "callers": Counter({c.name: c.calls for c in found.callers}),
        "consent": Counter(found.consent.outcomes),
    }


def random_history(seed: int, count: int) -> list[Record]:
    rng = random.Random(seed)  # noqa: S311 - made-up history, the same each run
    records = []
    for n in range(count):
        at = T0 + timedelta(seconds=rng.uniform(0, 4 * 86400))
        fields = {
            "app": rng.choice("ab"),
            "tool": rng.choice("xyz"),
            "caller": rng.choice(["c1", "c2", "c3"]),
            "duration_ms": round(rng.uniform(0.1, 50), 3),
            "consent": rng.choice([None] * 8 + ["once", "unanswered"]),
        }
        if rng.random() < 0.2:
            records.append(fail(f"r{n}", at, rng.choice(["TIMEOUT", "INVALID_PARAMS"]), **fields))
        else:
            records.append(make(f"r{n}", at, **fields))
    return records


def test_every_range_counts_what_the_records_say(store: HistoryStore) -> None:
    records = random_history(7, 800)
    write(store, records[:500])
    store.purge()  # the hourly counts hold the first 500 calls; the others are read from the calls
    write(store, records[500:])
    rng = random.Random(8)  # noqa: S311 - made-up ranges, the same each run
    ranges = [(T0, T0 + timedelta(days=4)), (T0 + timedelta(hours=3), T0 + timedelta(hours=5))]
    ranges += [
        (T0 + timedelta(hours=13, minutes=5), T0 + timedelta(hours=13, minutes=50)),  # within one hour
        (T0 + timedelta(hours=13, minutes=5), T0 + timedelta(hours=14, minutes=50)),  # two partial hours
    ]
    for _ in range(12):
        a, b = sorted(T0 + timedelta(seconds=rng.uniform(-3600, 4.2 * 86400)) for _ in range(2))
        ranges.append((a, b))
    for since, until in ranges:
        for only in ({}, {"app": "a"}, {"app": "b", "tool": "y"}, {"tool": "z"}):
            assert observed(store.stats(since, until, **only)) == expected(records, since, until, **only), (
                iso(since),
                iso(until),
                only,
            )


def test_deleting_old_calls_keeps_the_hourly_counts_exact(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    records = [make(f"o{n}", now - timedelta(days=40, minutes=n)) for n in range(30)]
    records += [fail(f"n{n}", now - timedelta(days=3, minutes=7 * n), "TIMEOUT") for n in range(20)]
    keeping_all = HistoryStore(tmp_path / "history.db", retention_days=36500)
    write(keeping_all, records)
    assert keeping_all.stats(now - timedelta(days=50), now).calls == 50
    keeping_all.close()
    store = HistoryStore(tmp_path / "history.db", retention_days=30)
    try:
        store.start()  # deletes the calls older than 30 days
        found = store.stats(now - timedelta(days=50), now)
        assert observed(found) == expected(records[30:], now - timedelta(days=50), now)
        with sqlite3.connect(store.path) as conn:
            assert conn.execute("SELECT count(*) FROM call_tools WHERE calls <= 0").fetchone() == (0,)
            assert conn.execute("SELECT sum(calls) FROM call_tools").fetchone() == (20,)
            # the sketches of the deleted hours went with them
            tools_rows = conn.execute("SELECT count(*) FROM call_tools").fetchone()
            assert conn.execute("SELECT count(*) FROM call_durations").fetchone() == tools_rows
            days = conn.execute("SELECT count(DISTINCT substr(hour, 1, 10) || app || tool) FROM call_tools").fetchone()
            assert conn.execute("SELECT count(*) FROM call_durations_daily").fetchone() == days
        conn.close()
    finally:
        store.close()


def test_a_version_1_history_is_migrated_with_its_counts(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    records = random_history(3, 200)
    with sqlite3.connect(path) as conn:
        for statement in store_module.SCHEMA:
            conn.execute(statement)
        columns = rows.COLUMNS.rsplit(", consent", 1)[0]
        conn.executemany(
            f"INSERT INTO calls ({columns}) VALUES ({', '.join('?' * 14)})",  # noqa: S608 - the store's own columns
            [rows.stored_row(r)[:14] for r in records],
        )
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    store = HistoryStore(path, retention_days=36500)
    try:
        store.start()
        since, until = T0 + timedelta(hours=1, minutes=30), T0 + timedelta(days=3, minutes=10)
        # a version 1 history kept no consent questions
        assert observed(store.stats(since, until)) == expected([replace_consent(r) for r in records], since, until)
        write(store, [make("new", T0 + timedelta(hours=2), consent="tool")])
        assert store.stats(since, until).consent.outcomes == {"tool": 1}
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA user_version").fetchone() == (store_module.SCHEMA_VERSION,)
        conn.close()
    finally:
        store.close()


def replace_consent(record: Record) -> Record:
    fields = {name: getattr(record, name) for name in record.__slots__}
    return Record(**{**fields, "consent": None})


def test_export_streams_every_record_in_order_in_batches(store: HistoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "EXPORT_BATCH", 3)
    records = known()
    write(store, records)
    assert [r.call_id for r in store.export()] == [r.call_id for r in records]
    failed = list(store.export(app="a", status="error", since=T0 + timedelta(minutes=30)))
    assert [r.call_id for r in failed] == ["x2", "x3", "x4", "x5", "x6", "x7"]
    exported = [json.loads(line) for line in lines(store.export(app="b"), "jsonl")]
    assert [e["id"] for e in exported] == [f"y{n}" for n in range(10)]
    assert exported[3]["error"] == {"code": -32000, "type": "APP_NOT_RUNNING", "detail": "no"}


def test_csv_has_a_header_and_no_formula_a_spreadsheet_would_run(store: HistoryStore) -> None:
    write(store, [make("f1", T0, args={"text": "=HYPERLINK(1)"}, caller="@evil", result='"+1"')])
    rows = list(csv.DictReader(io.StringIO("".join(lines(store.export(), "csv")))))
    assert len(rows) == 1
    assert rows[0]["caller"] == "'@evil"
    assert json.loads(rows[0]["args"]) == {"text": "=HYPERLINK(1)"}  # JSON text starts with {
    assert (rows[0]["status"], rows[0]["error_code"], rows[0]["duration_ms"]) == ("ok", "", "1.0")
    with pytest.raises(ValueError, match="jsonl, csv"):
        list(lines(store.export(), "xml"))


def test_the_writer_brings_the_hourly_counts_up_to_date_as_calls_are_recorded(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "CHECKPOINT_EVERY", 5)
    monkeypatch.setattr(writer, "MOST_WAITING", 5)  # calls that never pause
    records = random_history(11, 40)
    write(store, records[:12])  # by the writer thread: counted once 5 are waiting

    async def on_the_loop() -> None:
        for record in records[12:]:  # committed on the loop: counted with each checkpoint
            await store.write(record, alone=True)

    asyncio.run(on_the_loop())
    store.flush(30)
    with sqlite3.connect(store.path) as conn:
        ((counted,),) = conn.execute("SELECT seq FROM counted").fetchall()
        ((hourly,),) = conn.execute("SELECT sum(calls) FROM call_tools").fetchall()
    conn.close()
    assert 30 <= counted <= 40
    assert hourly == counted
    everything = (T0 - timedelta(days=1), T0 + timedelta(days=5))
    assert observed(store.stats(*everything)) == expected(records, *everything)


@pytest.mark.hostile("store")
def test_sketches_that_are_not_sketches_leave_the_rest_standing(store: HistoryStore) -> None:
    write(store, known())
    store.purge()
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE call_durations SET sketch = 'not a sketch' WHERE app = 'b'")
        conn.execute("UPDATE call_durations_daily SET sketch = 42 WHERE app = 'b'")
        conn.execute("UPDATE call_durations SET sketch = x'00' WHERE app = 'a' AND hour = '2030-05-01T12'")
    conn.close()
    found = store.stats(T0, T0 + timedelta(days=3))
    x, y = found.tools
    assert (x.calls, y.calls) == (100, 10)  # the counts are whole
    assert x.p50_ms == pytest.approx(52.0, rel=0.01)  # 4..100 ms: without the first hour's three calls
    assert y.p50_ms is None
    json.dumps(found.to_json(), allow_nan=False)

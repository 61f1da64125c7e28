"""Usage statistics over a time range of the call history, for the UI's Insights page and `aai-gateway stats`.

Counting a million calls anew for each look costs seconds, so the history also keeps counts per hour
(schema 2, `SCHEMA` below): calls and failures per hour, app and tool; per hour, app and caller; failures
per hour, app, tool and error type. Recording a call adds nothing to them: the store's writer thread
adds the calls recorded since it last did (`count_new`, with each checkpoint (history/writer.py) and before each
purge, which takes the deleted calls off), and `counted` says up to which `seq`. Triggers doing it on
each insert nearly doubled the cost of recording a call (bench.history_cost, 0.07 -> 0.13 ms). A range is read
in one snapshot from these counts for its whole hours, plus the calls recorded since (seq above
`counted`), and from the calls themselves (index on time) for the partial hours at its two ends, so
every count is exact whatever the range.

The p50, p95 and p99 duration of each tool, and of all of them, come from duration sketches kept per
hour and per day, app and tool beside the counts (schema 4, `SKETCHES`; history/sketch.py), within
1 % of the exact nearest-rank percentiles: the sketches of the range's whole days and hours are
merged, and the durations of its partial hours and of the calls not counted yet are added to them; a
tool with no sketch in the range (a range within an hour or two) gets its exact percentiles. The consent
questions are counted per hour too. Schemas 2 and 3 read durations and consent questions from two
indexes on the calls instead, which cost about 11 % of recording a call. `bench/stats.py` measures
each query on a million calls.
"""
# ruff: noqa: S608 - the statements are put together from this module's own column and table names;
# every value is a parameter

from __future__ import annotations

import functools
import math
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from aai_gateway.history import runs
from aai_gateway.history.record import iso
from aai_gateway.history.sketch import Sketch, exact, merged, slot, slot_sql

TOP = 10
"""Rows in each ranking: error types, callers."""
MAX_TOOLS = 20
"""Tools the Insights page plots the durations of, the busiest first."""
PERCENTILES = (0.50, 0.95, 0.99)
HOURLY_UP_TO = timedelta(days=2)
"""Ranges this long or shorter are counted per hour, longer ones per day."""
MAX_BUCKETS = 1000
"""Buckets at most in a range: the latest ones (a range of years over a history of weeks)."""
ANSWERED = ("once", "tool", "app", "deny", "never", "decided")
"""`Record.consent` values of a question that got an answer."""
HOUR = "substr(time, 1, 13)"
FAILED = "status = 'error'"
ASKED = "consent IS NOT NULL"

SCHEMA = (
    """CREATE TABLE call_tools (
        hour TEXT NOT NULL, app TEXT NOT NULL, tool TEXT NOT NULL, calls INTEGER NOT NULL, errors INTEGER NOT NULL,
        PRIMARY KEY (hour, app, tool)
    ) WITHOUT ROWID""",
    """CREATE TABLE call_callers (
        hour TEXT NOT NULL, app TEXT NOT NULL, caller TEXT NOT NULL, calls INTEGER NOT NULL, errors INTEGER NOT NULL,
        PRIMARY KEY (hour, app, caller)
    ) WITHOUT ROWID""",
    """CREATE TABLE call_errors (
        hour TEXT NOT NULL, app TEXT NOT NULL, tool TEXT NOT NULL, error_type TEXT NOT NULL, calls INTEGER NOT NULL,
        PRIMARY KEY (hour, app, tool, error_type)
    ) WITHOUT ROWID""",
    "CREATE TABLE counted (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL)",
    "INSERT INTO counted VALUES (1, 0)",
    "CREATE INDEX calls_durations ON calls (app, tool, duration_ms, time)",
    "CREATE INDEX calls_consent ON calls (time, consent) WHERE consent IS NOT NULL",
)
"""The hourly counts (made from the calls already kept by `count_new`) and the indexes the statistics read;
part of the store's schema 2."""
SKETCHES = (
    """CREATE TABLE call_durations (
        hour TEXT NOT NULL, app TEXT NOT NULL, tool TEXT NOT NULL, sketch BLOB NOT NULL,
        PRIMARY KEY (hour, app, tool)
    ) WITHOUT ROWID""",
    """CREATE TABLE call_durations_daily (
        day TEXT NOT NULL, app TEXT NOT NULL, tool TEXT NOT NULL, sketch BLOB NOT NULL,
        PRIMARY KEY (day, app, tool)
    ) WITHOUT ROWID""",
    """CREATE TABLE call_consent (
        hour TEXT NOT NULL, app TEXT NOT NULL, tool TEXT NOT NULL, consent TEXT NOT NULL, calls INTEGER NOT NULL,
        PRIMARY KEY (hour, app, tool, consent)
    ) WITHOUT ROWID""",
    "DROP INDEX IF EXISTS calls_durations",
    "DROP INDEX IF EXISTS calls_consent",
)
"""Schema 4: duration sketches per hour and per day, and consent questions per hour, instead of the two
indexes of schema 2."""
COUNTS = ("call_tools", "call_callers", "call_errors", "call_consent")


@dataclass(frozen=True, slots=True)
class Count:
    """Calls and failed calls of one app, tool, caller or time bucket."""

    name: str
    calls: int
    errors: int

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "errors": self.errors, "errorRate": round(self.error_rate, 4)}


@dataclass(frozen=True, slots=True)
class ErrorKind:
    app: str
    tool: str
    error_type: str
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"app": self.app, "tool": self.tool, "type": self.error_type, "count": self.count}


@dataclass(frozen=True, slots=True)
class ToolUsage:
    app: str
    tool: str
    calls: int
    errors: int
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "tool": self.tool,
            "calls": self.calls,
            "errors": self.errors,
            "errorRate": round(self.error_rate, 4),
            "p50Ms": None if self.p50_ms is None else round(self.p50_ms, 3),
            "p95Ms": None if self.p95_ms is None else round(self.p95_ms, 3),
            "p99Ms": None if self.p99_ms is None else round(self.p99_ms, 3),
        }


@dataclass(frozen=True, slots=True)
class Durations:
    """The p50, p95 and p99 duration of the calls of a range, all tools together; None without calls."""

    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            name: None if ms is None else round(ms, 3)
            for name, ms in (("p50Ms", self.p50_ms), ("p95Ms", self.p95_ms), ("p99Ms", self.p99_ms))
        }


@dataclass(frozen=True, slots=True)
class Consent:
    """Consent questions the calls asked, and how they ended (`Record.consent` values)."""

    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def asked(self) -> int:
        return sum(self.outcomes.values())

    @property
    def answered(self) -> int:
        return sum(n for outcome, n in self.outcomes.items() if outcome in ANSWERED)

    def to_json(self) -> dict[str, Any]:
        return {"asked": self.asked, "answered": self.answered, "outcomes": dict(sorted(self.outcomes.items()))}


@dataclass(frozen=True, slots=True)
class Stats:
    since: datetime
    until: datetime
    app: str | None
    tool: str | None
    bucket: str
    """"day" or "hour": what each entry of `per_bucket` counts."""
    buckets: tuple[str, ...]
    """Every bucket of the range, oldest first: 2026-11-24 (day) or 2026-11-24T08 (hour, UTC)."""
    per_bucket: dict[str, dict[str, Count]]
    """Bucket -> app -> calls; buckets without calls are left out."""
    apps: tuple[Count, ...]
    tools: tuple[ToolUsage, ...]
    error_kinds: tuple[ErrorKind, ...]
    callers: tuple[Count, ...]
    consent: Consent
    durations: Durations = Durations()

    @property
    def calls(self) -> int:
        return sum(a.calls for a in self.apps)

    @property
    def errors(self) -> int:
        return sum(a.errors for a in self.apps)

    def to_json(self) -> dict[str, Any]:
        return {
            "since": iso(self.since),
            "until": iso(self.until),
            "filters": {"app": self.app, "tool": self.tool},
            "calls": self.calls,
            "errors": self.errors,
            "bucket": self.bucket,
            "perBucket": [
                {"bucket": b, "app": app, **count.to_json()}
                for b in self.buckets
                for app, count in sorted(self.per_bucket.get(b, {}).items())
            ],
            "apps": [{"app": a.name, **a.to_json()} for a in self.apps],
            "tools": [t.to_json() for t in self.tools],
            "errorTypes": [e.to_json() for e in self.error_kinds],
            "callers": [{"caller": c.name, **c.to_json()} for c in self.callers],
            "consent": self.consent.to_json(),
            "durations": self.durations.to_json(),
        }


def empty(since: datetime, until: datetime, app: str | None = None, tool: str | None = None) -> Stats:
    """The statistics of a history with no calls (none recorded yet)."""
    bucket, buckets = _buckets(since, until)
    return Stats(since, until, app, tool, bucket, buckets, {}, (), (), (), (), Consent())


def gather(
    conn: sqlite3.Connection, since: datetime, until: datetime, app: str | None = None, tool: str | None = None
) -> Stats:
    """The statistics of the calls that started from `since` to `until` (inclusive), of `app` and `tool` if given.

    Each query is a statement of its own, so a read holds no snapshot of the database longer than one query.
    """
    if since > until:
        raise ValueError(f"since ({iso(since)}) is later than until ({iso(until)})")
    bucket, buckets = _buckets(since, until)
    conn.execute("BEGIN")  # one snapshot: the counts and the calls not counted yet agree
    try:
        return _gather(_Parts(conn, since, until, app, tool), bucket, buckets)
    finally:
        conn.execute("COMMIT")


def _gather(part: _Parts, bucket: str, buckets: tuple[str, ...]) -> Stats:
    since, until, app, tool = part.since, part.until, part.app, part.tool
    width = 13 if bucket == "hour" else 10
    per_bucket: dict[str, dict[str, Count]] = {}
    for (moment, name), (calls, errors) in part.sums(
        2, f"substr(hour, 1, {width}), app", f"substr(time, 1, {width}), app", "call_tools"
    ).items():
        per_bucket.setdefault(moment, {})[name] = Count(name, calls, errors)
    apps: dict[str, list[int]] = {}
    for counts in per_bucket.values():
        for name, count in counts.items():
            total = apps.setdefault(name, [0, 0])
            total[0] += count.calls
            total[1] += count.errors
    app_counts = tuple(sorted((Count(n, c, e) for n, (c, e) in apps.items()), key=lambda a: (-a.calls, a.name)))
    tools = sorted(
        (ToolUsage(a, t, c, e) for (a, t), (c, e) in part.sums(2, "app, tool", "app, tool", "call_tools").items()),
        key=lambda u: (-u.calls, u.app, u.tool),
    )
    timed, durations = _timed(part, tools)
    kinds = sorted(
        (
            ErrorKind(a, t, k, n)
            for (a, t, k), (n,) in part.sums(
                3, "app, tool, error_type", "app, tool, coalesce(error_type, 'ERROR')", "call_errors", only=FAILED
            ).items()
        ),
        key=lambda e: (-e.count, e.app, e.tool, e.error_type),
    )[:TOP]
    # the hourly counts per caller are not kept per tool: with a tool, counted from that tool's calls
    by_caller = part.sums(1, "caller", "caller", "call_callers" if tool is None else None)
    callers = sorted((Count(c, n, e) for (c,), (n, e) in by_caller.items()), key=lambda c: (-c.calls, c.name))[:TOP]
    outcomes = {str(k): n for (k,), (n,) in part.sums(1, "consent", "consent", "call_consent", only=ASKED).items()}
    return Stats(
        since,
        until,
        app,
        tool,
        bucket,
        buckets,
        per_bucket,
        app_counts,
        timed,
        tuple(kinds),
        tuple(callers),
        Consent(outcomes),
        durations,
    )


def count_new(conn: sqlite3.Connection) -> int:
    """Add the calls recorded since the last time to the hourly counts; how many. In a write transaction."""
    (last,) = conn.execute("SELECT seq FROM counted").fetchone()
    (newest,) = conn.execute("SELECT coalesce(max(seq), 0) FROM calls").fetchone()
    if newest > last:
        _add(conn, "seq > ? AND seq <= ?", [last, newest])
        conn.execute("UPDATE counted SET seq = ?", (newest,))
    return max(0, int(newest) - int(last))


def delete_before(conn: sqlite3.Connection, cutoff: str) -> int:
    """Delete the calls that started before `cutoff`, and the steps of the runs among them, and take them off
    the hourly counts; how many. In a write transaction."""
    count_new(conn)
    deleted = 0
    for where, params in runs.older(cutoff):
        _add(conn, where, params, sign=-1)
        deleted += conn.execute(f"DELETE FROM calls WHERE {where}", params).rowcount
    for table in COUNTS:
        conn.execute(f"DELETE FROM {table} WHERE calls <= 0")
    # every call left is counted; a table emptied numbers its next call 1 again
    conn.execute("UPDATE counted SET seq = (SELECT coalesce(max(seq), 0) FROM calls)")
    return deleted


def backfill(conn: sqlite3.Connection) -> None:
    """Schema 3 -> 4: the sketches and consent counts of the calls already counted. In the migration's transaction."""
    (counted,) = conn.execute("SELECT seq FROM counted").fetchone()
    _add(conn, "seq <= ?", [counted], tables=("call_consent",))
    _add_durations(conn, "seq <= ?", [counted])


def _add(
    conn: sqlite3.Connection, where: str, params: list[Any], sign: int = 1, tables: tuple[str, ...] = COUNTS
) -> None:
    """Add (or with sign -1 take off) the calls matching `where` to the hourly counts and sketches."""
    for table, keys, count, measures in (
        ("call_tools", "app, tool", 2, "count(*), sum(status = 'error')"),
        ("call_callers", "app, caller", 2, "count(*), sum(status = 'error')"),
        ("call_errors", "app, tool, coalesce(error_type, 'ERROR')", 3, "count(*)"),
        ("call_consent", "app, tool, consent", 3, "count(*)"),
    ):
        if table not in tables:
            continue
        failed = {"call_errors": f"{FAILED} AND ", "call_consent": f"{ASKED} AND "}.get(table, "")
        signed = ", ".join(f"{sign} * {m}" for m in measures.split(", "))
        columns = "calls" if count == 3 else "calls, errors"
        updates = ", ".join(f"{c} = {c} + excluded.{c}" for c in columns.split(", "))
        group = ", ".join(str(i + 1) for i in range(count + 1))
        conn.execute(
            f"INSERT INTO {table} SELECT {HOUR}, {keys}, {signed} FROM calls WHERE {failed}({where}) "
            f"GROUP BY {group} ON CONFLICT DO UPDATE SET {updates}",
            params,
        )
    if tables == COUNTS:
        _add_durations(conn, where, params, sign)


@functools.cache
def _slot_in_sql() -> str | None:
    """The slot of `duration_ms` computed by SQLite, or None when its library was built without the math
    functions (they are an option): then a Python function computes it, called back for each row."""
    try:
        with closing(sqlite3.connect(":memory:")) as probe:
            probe.execute("SELECT ln(2.0), ceil(1.5)")
    except sqlite3.OperationalError:
        return None
    return slot_sql("duration_ms")


def _add_durations(conn: sqlite3.Connection, where: str, params: list[Any], sign: int = 1) -> None:
    """Add (or take off) the durations of the calls matching `where` to the sketches of their hours and
    days; SQL groups them by slot, so a sketch is read and written once per hour (day), app and tool."""
    slot_of = _slot_in_sql()
    if slot_of is None:
        conn.create_function("aai_slot", 1, slot, deterministic=True)
        slot_of = "aai_slot(duration_ms)"
    hours: dict[tuple[str, str, str], Sketch] = {}
    for hour, app, tool, k, n, low, high in conn.execute(
        f"SELECT {HOUR}, app, tool, {slot_of}, count(*), min(duration_ms), max(duration_ms) "
        f"FROM calls WHERE {where} GROUP BY 1, 2, 3, 4",
        params,
    ):
        hours.setdefault((hour, app, tool), Sketch()).add_slot(k, n, low, high)
    days: dict[tuple[str, str, str], Sketch] = {}
    for (hour, app, tool), added in hours.items():
        days.setdefault((hour[:10], app, tool), Sketch()).merge(added)
    for table, column, found in (("call_durations", "hour", hours), ("call_durations_daily", "day", days)):
        key = f"{column} = ? AND app = ? AND tool = ?"
        for at, added in found.items():
            row = conn.execute(f"SELECT sketch FROM {table} WHERE {key}", at).fetchone()
            sketch = Sketch() if row is None else Sketch.of_blob(row[0])
            if sign > 0:
                sketch.merge(added)
            else:
                sketch.subtract(added)
            if sketch.counts > 0:
                conn.execute(f"INSERT OR REPLACE INTO {table} VALUES (?, ?, ?, ?)", (*at, sketch.to_blob()))
            else:
                conn.execute(f"DELETE FROM {table} WHERE {key}", at)


class _Parts:
    """A range as its whole hours, read from the hourly counts, and the partial hours at its ends, from the calls."""

    def __init__(
        self, conn: sqlite3.Connection, since: datetime, until: datetime, app: str | None, tool: str | None
    ) -> None:
        self.conn, self.since, self.until = conn, since, until
        first = _hour_start(since)
        if first < since:
            first += timedelta(hours=1)
        last = _hour_start(until)  # the hour `until` falls in is partial (until is inclusive)
        self.filters, self.filter_params = _filters(app, tool)
        filters = self.filters
        self.app, self.tool = app, tool
        (self.counted,) = conn.execute("SELECT seq FROM counted").fetchone()
        self.first, self.last = iso(first), iso(last)
        if first < last:
            self.hours: tuple[str, str] | None = (iso(first)[:13], iso(last)[:13])
            self.edges = f"((time >= ? AND time < ?) OR (time >= ? AND time <= ?)){filters}"
            self.edge_params = [iso(since), iso(first), iso(last), iso(until), *self.filter_params]
        else:
            self.hours = None
            self.edges = f"time >= ? AND time <= ?{filters}"
            self.edge_params = [iso(since), iso(until), *self.filter_params]
        self.whole = f"time >= ? AND time <= ?{filters}"
        self.whole_params = [iso(since), iso(until), *self.filter_params]

    def sums(
        self, keys: int, counted_keys: str, call_keys: str, table: str | None, *, only: str | None = None
    ) -> dict[tuple[Any, ...], tuple[int, ...]]:
        """Key -> (calls, failed calls) over the range; with `only` (FAILED, ASKED), key -> (calls,) of the
        calls that match it, from a table that counts those alone. `table` None: from the calls alone."""
        group = ", ".join(str(i + 1) for i in range(keys))
        failed = f"{only} AND " if only else ""
        measures = "count(*)" if only else "count(*), sum(status = 'error')"
        queries: list[tuple[str, list[Any]]] = []
        if table is None:
            sql = f"SELECT {call_keys}, {measures} FROM calls WHERE {failed}{self.whole} GROUP BY {group}"
            queries.append((sql, self.whole_params))
        else:
            if self.hours is not None:
                tool = self.tool if table != "call_callers" else None
                filters, params = _filters(self.app, tool)
                counted = "sum(calls)" if only else "sum(calls), sum(errors)"
                sql = (
                    f"SELECT {counted_keys}, {counted} FROM {table} WHERE hour >= ? AND hour < ?{filters} "
                    f"GROUP BY {group}"
                )
                queries.append((sql, [*self.hours, *params]))
                # the calls of those hours recorded since the counts were last brought up to date: the
                # newest rows of the table, read by seq (NOT INDEXED keeps SQLite off the time index)
                sql = (
                    f"SELECT {call_keys}, {measures} FROM calls NOT INDEXED "
                    f"WHERE {failed}seq > ? AND time >= ? AND time < ?"
                    f"{self.filters} GROUP BY {group}"
                )
                queries.append((sql, [self.counted, self.first, self.last, *self.filter_params]))
            sql = f"SELECT {call_keys}, {measures} FROM calls WHERE {failed}{self.edges} GROUP BY {group}"
            queries.append((sql, self.edge_params))
        found: dict[tuple[Any, ...], list[int]] = {}
        for sql, params in queries:
            for row in self.conn.execute(sql, params):
                key, values = tuple(row[:keys]), row[keys:]
                total = found.setdefault(key, [0] * len(values))
                for i, value in enumerate(values):
                    total[i] += value or 0
        return {key: tuple(values) for key, values in found.items() if values[0] > 0}

    def durations(self) -> tuple[dict[tuple[str, str], list[bytes]], dict[tuple[str, str], list[float]]]:
        """(app, tool) -> the sketches of the range's whole hours, and -> the durations of the calls not in
        them: those of the partial hours and those not counted yet."""
        sketches: dict[tuple[str, str], list[bytes]] = {}
        loose: dict[tuple[str, str], list[float]] = {}
        queries: list[tuple[str, list[Any]]] = []
        if self.hours is not None:
            filters, params = _filters(self.app, self.tool)
            for table, column, since, until in _sketched(*self.hours):
                sql = f"SELECT app, tool, sketch FROM {table} WHERE {column} >= ? AND {column} < ?{filters}"
                for app, tool, blob in self.conn.execute(sql, [since, until, *params]):
                    sketches.setdefault((app, tool), []).append(blob)
            sql = (
                "SELECT app, tool, duration_ms FROM calls NOT INDEXED "
                f"WHERE seq > ? AND time >= ? AND time < ?{self.filters}"
            )
            queries.append((sql, [self.counted, self.first, self.last, *self.filter_params]))
        queries.append((f"SELECT app, tool, duration_ms FROM calls WHERE {self.edges}", self.edge_params))
        for sql, params in queries:
            for app, tool, ms in self.conn.execute(sql, params):
                loose.setdefault((app, tool), []).append(ms)
        return sketches, loose


def _sketched(first: str, last: str) -> list[tuple[str, str, str, str]]:
    """The whole hours from `first` to `last` (2026-11-24T08, exclusive) as the sketches that hold them:
    (table, key column, from, to), the whole days' from the daily ones (a 30-day range merges some 70
    sketches a tool instead of 720), the hours at either end from the hourly ones."""
    day = date.fromisoformat(first[:10])
    if first[11:13] != "00":
        day += timedelta(days=1)
    whole = (day.isoformat(), last[:10])
    if whole[0] >= whole[1]:
        return [("call_durations", "hour", first, last)]
    return [
        ("call_durations", "hour", first, f"{whole[0]}T00"),
        ("call_durations_daily", "day", *whole),
        ("call_durations", "hour", f"{whole[1]}T00", last),
    ]


def percentile_rank(count: int, fraction: float) -> int:
    """The nearest-rank percentile's 0-based position among `count` sorted values."""
    return max(0, math.ceil(fraction * count) - 1)


def _timed(part: _Parts, tools: list[ToolUsage]) -> tuple[tuple[ToolUsage, ...], Durations]:
    """Each tool with its p50, p95 and p99, and those of all tools together: from the sketches (within 1 %)
    when the range has any of the tool's, else exact."""
    sketches, loose = part.durations()
    every = Sketch()
    timed = []
    for usage in tools:
        key = (usage.app, usage.tool)
        values = loose.get(key, [])
        if key in sketches:
            sketch = merged(sketches[key])
            for ms in values:
                sketch.add(ms)
            every.merge(sketch)
            found = sketch.percentiles(*PERCENTILES)
        else:
            found = exact(values, *PERCENTILES)
        timed.append(ToolUsage(usage.app, usage.tool, usage.calls, usage.errors, *found))
    if every.counts:
        for key, values in loose.items():
            if key not in sketches:
                for ms in values:
                    every.add(ms)
        overall = every.percentiles(*PERCENTILES)
    else:
        overall = exact([ms for values in loose.values() for ms in values], *PERCENTILES)
    return tuple(timed), Durations(*overall)


def _filters(app: str | None, tool: str | None) -> tuple[str, list[Any]]:
    clauses, params = "", []
    for column, value in (("app", app), ("tool", tool)):
        if value is not None:
            clauses += f" AND {column} = ?"
            params.append(value)
    return clauses, params


def _hour_start(moment: datetime) -> datetime:
    return datetime.fromisoformat(iso(moment)[:13] + ":00:00+00:00")


def _buckets(since: datetime, until: datetime) -> tuple[str, tuple[str, ...]]:
    hourly = until - since <= HOURLY_UP_TO
    step, width = (timedelta(hours=1), 13) if hourly else (timedelta(days=1), 10)
    since = max(since, until - step * (MAX_BUCKETS - 1))  # the latest buckets of a range of years

    def floor(moment: datetime) -> datetime:
        return datetime.fromisoformat(iso(moment)[:width] + (":00:00+00:00" if hourly else "T00:00:00+00:00"))

    start = floor(since)
    found: list[str] = []
    moment = start
    while moment <= until:
        found.append(iso(moment)[:width])
        moment += step
    return ("hour" if hourly else "day"), tuple(found)


def tool_counts(conn: sqlite3.Connection, since: datetime, until: datetime) -> dict[tuple[str, str], tuple[int, int]]:
    """(app, tool) -> (calls, failed calls) of the calls from `since` to `until`, in one snapshot."""
    conn.execute("BEGIN")
    try:
        sums = _Parts(conn, since, until, None, None).sums(2, "app, tool", "app, tool", "call_tools")
    finally:
        conn.execute("COMMIT")
    return {(str(key[0]), str(key[1])): (int(value[0]), int(value[1])) for key, value in sums.items()}

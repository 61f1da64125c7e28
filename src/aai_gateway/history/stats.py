"""Usage statistics over a time range of the call history, for the UI's Insights page and `aai-gateway stats`.

Counting a million calls anew for each look costs seconds, so the history also keeps counts per hour
(schema 2, `SCHEMA` below): calls and failures per hour, app and tool; per hour, app and caller; failures
per hour, app, tool and error type. Triggers keep them exact as records are inserted and deleted. A range
is read from these counts for its whole hours, and from the calls themselves (index on time) for the
partial hours at its two ends, so every figure is exact whatever the range.

The nearest-rank p50 and p95 duration of the busiest MAX_TOOLS tools are read from the calls, by one
`ORDER BY duration_ms LIMIT 1 OFFSET k` each: along the index (app, tool, duration_ms, time) when the
range holds most of the tool's calls, else over the range's calls of the tool (index on app, tool, time
and duration_ms), sorted by SQLite; either way no row comes into Python. The consent questions are
counted from a partial index over the calls that asked one. `bench/stats.py` measures each query on a million calls.
"""
# ruff: noqa: S608 - the statements are put together from this module's own column and table names;
# every value is a parameter

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from aai_gateway.history.record import iso

TOP = 10
"""Rows in each ranking: error types, callers."""
MAX_TOOLS = 20
"""Tools whose p50/p95 are computed, the busiest first."""
HOURLY_UP_TO = timedelta(days=2)
"""Ranges this long or shorter are counted per hour, longer ones per day."""
MAX_BUCKETS = 1000
"""Buckets at most in a range: the latest ones (a range of years over a history of weeks)."""
ANSWERED = ("once", "tool", "app", "deny", "never", "decided")
"""`Record.consent` values of a question that got an answer."""
HOUR = "substr(time, 1, 13)"

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
    f"""INSERT INTO call_tools SELECT {HOUR}, app, tool, count(*), sum(status = 'error') FROM calls
        GROUP BY 1, 2, 3""",
    f"""INSERT INTO call_callers SELECT {HOUR}, app, caller, count(*), sum(status = 'error') FROM calls
        GROUP BY 1, 2, 3""",
    f"""INSERT INTO call_errors SELECT {HOUR}, app, tool, coalesce(error_type, 'ERROR'), count(*) FROM calls
        WHERE status = 'error' GROUP BY 1, 2, 3, 4""",
    """CREATE TRIGGER calls_counted AFTER INSERT ON calls BEGIN
        INSERT INTO call_tools VALUES (substr(NEW.time, 1, 13), NEW.app, NEW.tool, 1, NEW.status = 'error')
            ON CONFLICT DO UPDATE SET calls = calls + 1, errors = errors + excluded.errors;
        INSERT INTO call_callers VALUES (substr(NEW.time, 1, 13), NEW.app, NEW.caller, 1, NEW.status = 'error')
            ON CONFLICT DO UPDATE SET calls = calls + 1, errors = errors + excluded.errors;
        INSERT INTO call_errors
            SELECT substr(NEW.time, 1, 13), NEW.app, NEW.tool, coalesce(NEW.error_type, 'ERROR'), 1
            WHERE NEW.status = 'error'
            ON CONFLICT DO UPDATE SET calls = calls + 1;
    END""",
    """CREATE TRIGGER calls_uncounted AFTER DELETE ON calls BEGIN
        UPDATE call_tools SET calls = calls - 1, errors = errors - (OLD.status = 'error')
            WHERE hour = substr(OLD.time, 1, 13) AND app = OLD.app AND tool = OLD.tool;
        UPDATE call_callers SET calls = calls - 1, errors = errors - (OLD.status = 'error')
            WHERE hour = substr(OLD.time, 1, 13) AND app = OLD.app AND caller = OLD.caller;
        UPDATE call_errors SET calls = calls - 1
            WHERE OLD.status = 'error' AND hour = substr(OLD.time, 1, 13) AND app = OLD.app AND tool = OLD.tool
            AND error_type = coalesce(OLD.error_type, 'ERROR');
    END""",
    "CREATE INDEX calls_durations ON calls (app, tool, duration_ms, time)",
    "CREATE INDEX calls_tool_time ON calls (app, tool, time, duration_ms)",
    "CREATE INDEX calls_consent ON calls (time, consent) WHERE consent IS NOT NULL",
)
"""The hourly counts, their triggers and the indexes the statistics read; part of the store's schema 2."""
COUNTS = ("call_tools", "call_callers", "call_errors")
SORT_IN_RANGE_BELOW = 0.125
"""A range covering less than this share of the time the history spans has its percentiles sorted from the
range's calls; a wider one walks the index in duration order."""


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
    """None for the tools beyond the MAX_TOOLS busiest."""

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
    part = _Parts(conn, since, until, app, tool)
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
    index = _percentile_index(conn, since, until) if tools else ""
    timed = [_timed(conn, usage, since, until, index) for usage in tools[:MAX_TOOLS]]
    kinds = sorted(
        (
            ErrorKind(a, t, k, n)
            for (a, t, k), (n,) in part.sums(
                3, "app, tool, error_type", "app, tool, coalesce(error_type, 'ERROR')", "call_errors", errors=True
            ).items()
        ),
        key=lambda e: (-e.count, e.app, e.tool, e.error_type),
    )[:TOP]
    # the hourly counts per caller are not kept per tool: with a tool, counted from that tool's calls
    by_caller = part.sums(1, "caller", "caller", "call_callers" if tool is None else None)
    callers = sorted((Count(c, n, e) for (c,), (n, e) in by_caller.items()), key=lambda c: (-c.calls, c.name))[:TOP]
    outcomes = dict(
        conn.execute(
            f"SELECT consent, count(*) FROM calls WHERE consent IS NOT NULL AND {part.whole} GROUP BY consent",
            part.whole_params,
        ).fetchall()
    )
    return Stats(
        since,
        until,
        app,
        tool,
        bucket,
        buckets,
        per_bucket,
        app_counts,
        (*timed, *tools[MAX_TOOLS:]),
        tuple(kinds),
        tuple(callers),
        Consent(outcomes),
    )


def prune(conn: sqlite3.Connection) -> None:
    """Drop the hourly counts left at nothing by deleted calls."""
    for table in COUNTS:
        conn.execute(f"DELETE FROM {table} WHERE calls <= 0")


class _Parts:
    """A range as its whole hours, read from the hourly counts, and the partial hours at its ends, from the calls."""

    def __init__(
        self, conn: sqlite3.Connection, since: datetime, until: datetime, app: str | None, tool: str | None
    ) -> None:
        self.conn = conn
        first = _hour_start(since)
        if first < since:
            first += timedelta(hours=1)
        last = _hour_start(until)  # the hour `until` falls in is partial (until is inclusive)
        filters, self.filter_params = _filters(app, tool)
        self.app, self.tool = app, tool
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
        self, keys: int, counted_keys: str, call_keys: str, table: str | None, *, errors: bool = False
    ) -> dict[tuple[Any, ...], tuple[int, ...]]:
        """Key -> (calls, failed calls) over the range; with `errors`, key -> (failed calls,) for error kinds.
        `table` None: from the calls alone, over the whole range."""
        group = ", ".join(str(i + 1) for i in range(keys))
        failed = "status = 'error' AND " if errors else ""
        measures = "count(*)" if errors else "count(*), sum(status = 'error')"
        queries: list[tuple[str, list[Any]]] = []
        if table is None:
            sql = f"SELECT {call_keys}, {measures} FROM calls WHERE {failed}{self.whole} GROUP BY {group}"
            queries.append((sql, self.whole_params))
        else:
            if self.hours is not None:
                tool = self.tool if table != "call_callers" else None
                filters, params = _filters(self.app, tool)
                counted = "sum(calls)" if errors else "sum(calls), sum(errors)"
                sql = (
                    f"SELECT {counted_keys}, {counted} FROM {table} WHERE hour >= ? AND hour < ?{filters} "
                    f"GROUP BY {group}"
                )
                queries.append((sql, [*self.hours, *params]))
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


def percentile_rank(count: int, fraction: float) -> int:
    """The nearest-rank percentile's 0-based position among `count` sorted values."""
    return max(0, math.ceil(fraction * count) - 1)


def _timed(conn: sqlite3.Connection, usage: ToolUsage, since: datetime, until: datetime, index: str) -> ToolUsage:
    """`usage` with its p50 and p95, each read from whichever end of the order is nearer."""

    def at(fraction: float) -> float:
        rank = percentile_rank(usage.calls, fraction)
        order, skip = ("DESC", usage.calls - 1 - rank) if rank > usage.calls // 2 else ("", rank)
        row = conn.execute(
            f"SELECT duration_ms FROM calls INDEXED BY {index} "
            f"WHERE app = ? AND tool = ? AND time >= ? AND time <= ? ORDER BY duration_ms {order} LIMIT 1 OFFSET ?",
            (usage.app, usage.tool, iso(since), iso(until), skip),
        ).fetchone()
        return float(row[0]) if row is not None else math.nan

    return ToolUsage(usage.app, usage.tool, usage.calls, usage.errors, at(0.50), at(0.95))


def _percentile_index(conn: sqlite3.Connection, since: datetime, until: datetime) -> str:
    """The index percentiles are read along: in duration order when the range covers most of the history's time,
    else by time (the range's calls alone, sorted)."""
    # two statements: SQLite reads a lone min() or max() from the index's end, but not both in one
    (oldest,) = conn.execute("SELECT min(time) FROM calls").fetchone()
    (newest,) = conn.execute("SELECT max(time) FROM calls").fetchone()
    if oldest is None:
        return "calls_tool_time"
    held = datetime.fromisoformat(newest) - datetime.fromisoformat(oldest)
    covered = min(until, datetime.fromisoformat(newest)) - max(since, datetime.fromisoformat(oldest))
    wide = covered >= SORT_IN_RANGE_BELOW * held
    return "calls_durations" if wide else "calls_tool_time"


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

"""Usage statistics over a big history: fill one with a million calls (30 days, 8 apps, 40 tools, 20 callers,
about 5 % failing, 1 % asking for consent), then time each statistics query, the whole `HistoryStore.stats`,
the Insights page's rendering and an export, for the last 24 hours, 7 days and 30 days.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.stats [--calls 1000000] [--runs 3]

The history is written straight into SQLite in one transaction, its indexes dropped meanwhile and made
again after, the hourly counts made from the calls as the gateway's writer thread makes them: a bulk
fill, not a measure of recording calls (`bench.history_cost` is). Each statement `stats.gather` runs is
timed through a connection that times them, and summed per kind (hourly counts, the partial hours at the
ends, percentiles, consent).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from aai_gateway.history import HistoryStore
from aai_gateway.history import stats as history_stats
from aai_gateway.history.record import iso, now
from aai_gateway.history.rows import INSERT
from aai_gateway.web.app import templates
from aai_gateway.web.insights import RANGE_TITLES, choose, insights_context

APPS = [f"com.example.app{i}" for i in range(8)]
TOOLS = [f"tool{i}" for i in range(5)]
CALLERS = [f"agent-{i}" for i in range(20)]
ERRORS = ["TIMEOUT", "INVALID_PARAMS", "APP_NOT_RUNNING", "AUTOMATION_FAILED", "CONSENT_REQUIRED", "PERMISSION_DENIED"]
UNCOUNTED = 2000
"""The newest calls are left out of the hourly counts, as between two of the writer thread's updates."""
OUTCOMES = ["once", "tool", "app", "deny", "never", "decided", "unanswered"]


def fill(path: Path, calls: int, end: datetime) -> float:
    """Write `calls` records spread over the 30 days before `end`; the seconds it took."""
    started = time.perf_counter()
    store = HistoryStore(path, retention_days=3650)
    store.start()
    store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    made = "SELECT type, name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    extras = conn.execute(made).fetchall()
    for kind, name, _ in extras:
        conn.execute(f"DROP {kind} {name}")
    rng = random.Random(19)  # noqa: S311 - made-up data, the same each run
    span = 30 * 86400.0
    conn.execute("BEGIN")
    batch = []
    for n in reversed(range(calls)):  # oldest first, as recorded
        at = end - timedelta(seconds=span * n / calls)
        app = APPS[min(int(rng.expovariate(0.5)), len(APPS) - 1)]
        tool = TOOLS[min(int(rng.expovariate(0.7)), len(TOOLS) - 1)]
        failed = rng.random() < 0.05
        consent = rng.choice(OUTCOMES) if rng.random() < 0.01 else None
        batch.append(
            (
                f"{n:012x}",
                iso(at),
                CALLERS[min(int(rng.expovariate(0.3)), len(CALLERS) - 1)],
                "stdio",
                app,
                tool,
                '{"text": "x"}',
                "error" if failed else "ok",
                -32000 if failed else None,
                rng.choice(ERRORS) if failed else None,
                "failed" if failed else None,
                rng.lognormvariate(1.0, 0.8),
                None if failed else '"x"',
                0,
                consent,
                None,
                None,
            )
        )
        if len(batch) == 50_000 or n == UNCOUNTED:
            conn.executemany(INSERT, batch)
            batch.clear()
        if n == UNCOUNTED:
            conn.execute("COMMIT")
            for _, _, sql in extras:
                conn.execute(sql)
            conn.execute("BEGIN IMMEDIATE")
            history_stats.count_new(conn)  # as the gateway's writer thread does
            conn.execute("COMMIT")
            conn.execute("BEGIN")
    conn.executemany(INSERT, batch)
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()
    return time.perf_counter() - started


def best(run: Callable[[], object], runs: int) -> tuple[float, float]:
    """The fastest and the median of `runs` runs, in ms."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return min(times), statistics.median(times)


class Timed:
    """A connection whose statements are timed (run and read whole), summed per kind."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.times: dict[str, float] = {}

    def execute(self, sql: str, params: Sequence[object] = ()) -> Rows:
        started = time.perf_counter()
        rows = self.conn.execute(sql, params).fetchall()
        took = (time.perf_counter() - started) * 1000
        kind = next((name for word, name in KINDS if word in sql), "other")
        self.times[kind] = self.times.get(kind, 0.0) + took
        return Rows(rows)


class Rows(list[tuple[object, ...]]):
    def fetchone(self) -> tuple[object, ...] | None:
        return self[0] if self else None

    def fetchall(self) -> list[tuple[object, ...]]:
        return list(self)


KINDS = (
    ("FROM call_durations", "durations: hourly and daily sketches"),
    ("duration_ms FROM calls", "durations: partial hours, not counted"),
    ("FROM call_consent", "consent questions: hourly counts"),
    ("consent IS NOT NULL", "consent questions: from the calls"),
    ("SELECT seq FROM counted", "how far the hourly counts go"),
    ("FROM call_tools", "per bucket, app, tool: hourly counts"),
    ("FROM call_errors", "error types: hourly counts"),
    ("FROM call_callers", "callers: hourly counts"),
    ("seq > ?", "every count: calls not counted yet"),
    ("FROM calls", "every count: partial hours at the ends"),
)


def timed_gather(path: Path, since: datetime, until: datetime) -> dict[str, float]:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA query_only = ON")
    timed = Timed(conn)
    history_stats.gather(timed, since, until)  # type: ignore[arg-type]
    conn.close()
    return timed.times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    end = now()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.db"
        seconds = fill(path, options.calls, end)
        size = path.stat().st_size / 1e6
        print(f"filled {options.calls:,} calls in {seconds:.1f} s; history.db {size:.0f} MB\n")
        store = HistoryStore(path, retention_days=3650)
        env = templates()
        print(f"{'ms (fastest / median of ' + str(options.runs) + ')':<34}{'24 h':>16}{'7 d':>16}{'30 d':>16}")
        ranges = [timedelta(days=1), timedelta(days=7), timedelta(days=30)]
        figures: dict[str, list[str]] = {}
        for span in ranges:
            since = end - span
            runs = [timed_gather(path, since, end) for _ in range(options.runs)]
            for _, name in KINDS:
                times = [run.get(name, 0.0) for run in runs]
                figures.setdefault(name, []).append(f"{min(times):.1f} / {statistics.median(times):.1f}")
            whole = best(lambda since=since: store.stats(since, end), options.runs)  # type: ignore[misc]
            figures.setdefault("HistoryStore.stats (all of them)", []).append("{:.1f} / {:.1f}".format(*whole))
            found = store.stats(since, end)

            def render(found: history_stats.Stats = found) -> object:
                chosen, _ = choose({"range": "custom", "since": iso(found.since), "until": iso(found.until)}, end)
                page = env.get_template("insights.html")
                return page.render(
                    base="/ui",
                    csrf="x",
                    csrf_field="csrf",
                    here="/ui/insights",
                    chosen=chosen,
                    errors=[],
                    range_titles=RANGE_TITLES,
                    **insights_context(found),
                )

            figures.setdefault("Insights page render (SVG + HTML)", []).append(
                "{:.1f} / {:.1f}".format(*best(render, options.runs))
            )
        for name, cells in figures.items():
            print(f"{name:<34}" + "".join(f"{cell:>16}" for cell in cells))
        started = time.perf_counter()
        exported = sum(len(json.dumps(r.to_json())) for r in store.export(since=end - timedelta(days=1)))
        took = time.perf_counter() - started
        day = store.count(since=end - timedelta(days=1))
        print(f"\nexport of the last 24 h as JSON lines: {day:,} records, {exported / 1e6:.1f} MB in {took:.2f} s")


if __name__ == "__main__":
    main()

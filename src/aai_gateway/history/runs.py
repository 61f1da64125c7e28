"""Runs and their steps in the history: a run (a plan or a saved workflow, app RUN_APP) is one record, and
each step and each undo is a record of its own whose `parent` is the run's call id and whose `step` is its
label. A listing shows a run as one entry with its steps beneath it.

The steps are recorded as they end, the run when it ends, so for a while (or for good, when the gateway
ended during the run) steps may point at a run that is not recorded: such a step is listed on its own, as
an entry naming the run it belongs to, never hidden. Retention deletes a run and its steps together, by
the run's start (see `older`), so no step outlives its run.

Measured on 2026-11-25 (a shared 2-core machine) over bench/stats.py's million calls plus 2,000 runs
of 10 steps, best of 5: 50 entries 0.8 ms (the flat listing 0.5), with --app 8 ms, --status error 5 ms;
counting them 14 ms (the flat count 9), with --app 23 ms (11), --status error 72 ms. The first version,
one condition `match OR id IN (runs of matching steps)`, took 1.2 s for --app: SQLite then collects
and sorts every match instead of walking the (app, time) index.
"""
# ruff: noqa: S608 - the statements are put together from this module's own column names; values are parameters

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from aai_gateway.history.record import Record
from aai_gateway.history.rows import COLUMNS, record_of

SCHEMA = ("CREATE INDEX calls_parent ON calls (parent, time) WHERE parent IS NOT NULL",)
"""The index that finds a run's steps; partial, so that a call of its own costs nothing more to record."""
LISTED = 20
"""Steps listed beneath a run in a listing; `history show RUN` and the run's page show them all."""
SHOWN = 1000
"""Steps `history show RUN` and the run's page show at most."""
NOT_RECORDED = "not recorded: under way, or the gateway ended during it"
"""What a step whose run has no record says of it."""
TOP = "(parent IS NULL OR NOT EXISTS (SELECT 1 FROM calls AS run WHERE run.id = calls.parent))"
"""A listing's entries: calls of their own, runs, and the steps whose run is not recorded."""

_STEPS = "SELECT parent FROM calls INDEXED BY calls_parent WHERE parent IS NOT NULL AND {}"
"""The runs of the steps matching a condition."""

Filters = tuple[str, list[Any]]
"""The conditions of a WHERE clause ("" for none) and their parameters."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a listing: a call, or a run with its first steps, or a step whose run is not recorded."""

    record: Record
    children: tuple[Record, ...] = ()
    steps: int = 0
    """The run's steps and undos, listed or not."""

    @property
    def more(self) -> int:
        """Steps not listed beneath the run."""
        return self.steps - len(self.children)

    @property
    def run_missing(self) -> bool:
        """A step listed on its own: its run is under way, or ended with the gateway before it was recorded."""
        return self.record.parent is not None

    def to_json(self) -> dict[str, Any]:
        found = self.record.to_json()
        if self.steps:
            found["children"] = [child.to_json() for child in self.children]
            found["childCount"] = self.steps
        return found


def entries(conn: sqlite3.Connection, filters: Filters, limit: int, offset: int, listed: int = LISTED) -> list[Entry]:
    """The entries matching `filters`, newest first; a run matches when one of its steps does."""
    where, params = filters
    if where:  # two ordered parts, each along its index: one condition with OR sorted every match (1 s for 1M)
        sql = (
            f"SELECT {COLUMNS}, seq FROM calls WHERE {TOP} AND {where} UNION ALL "
            f"SELECT {COLUMNS}, seq FROM calls WHERE {TOP} AND NOT ({where}) AND id IN ({_STEPS.format(where)})"
        )
        params = [*params, *params, *params]
    else:
        sql = f"SELECT {COLUMNS}, seq FROM calls WHERE {TOP}"
    rows = conn.execute(f"{sql} ORDER BY time DESC, seq DESC LIMIT ? OFFSET ?", [*params, limit, offset]).fetchall()
    records = [record_of(row[:-1]) for row in rows]
    counts = child_counts(conn, [r.call_id for r in records])
    return [
        Entry(r, tuple(children(conn, r.call_id, listed)) if r.call_id in counts else (), counts.get(r.call_id, 0))
        for r in records
    ]


def count_entries(conn: sqlite3.Connection, filters: Filters) -> int:
    """How many entries match: the calls that match, less the matching steps listed under their run, plus
    the runs listed for a matching step alone. Read along the indexes; the steps are walked, the calls not."""
    where, params = filters
    every = f"WHERE {where}" if where else ""
    also = f"AND {where}" if where else ""
    sql = f"""SELECT (SELECT count(*) FROM calls {every})
        - (SELECT count(*) FROM calls INDEXED BY calls_parent WHERE parent IS NOT NULL {also}
           AND EXISTS (SELECT 1 FROM calls AS run WHERE run.id = calls.parent))"""
    if where:
        sql += f" + (SELECT count(*) FROM calls WHERE NOT ({where}) AND {TOP} AND id IN ({_STEPS.format(where)}))"
    found: int = conn.execute(sql, [*params, *params, *params, *params] if where else []).fetchone()[0]
    return found


def children(conn: sqlite3.Connection, run_id: str, limit: int | None = None) -> list[Record]:
    """The steps and undos of a run, in the order they started."""
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM calls WHERE parent = ? ORDER BY time, seq LIMIT ?",
        (run_id, -1 if limit is None else limit),
    ).fetchall()
    return [record_of(row) for row in rows]


def child_counts(conn: sqlite3.Connection, ids: list[str]) -> dict[str, int]:
    """Call id -> how many steps and undos point at it, for those of `ids` that have any."""
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    rows = conn.execute(f"SELECT parent, count(*) FROM calls WHERE parent IN ({marks}) GROUP BY parent", ids).fetchall()
    return {str(parent): int(n) for parent, n in rows}


def older(cutoff: str) -> tuple[Filters, Filters]:
    """What retention deletes, in this order: the steps of the runs started before `cutoff` that started
    after it, then the calls started before it (runs, their other steps, calls of their own). Two parts,
    since a DELETE whose condition reads the runs it deletes would miss their steps."""
    return ("time >= ? AND parent IN (SELECT id FROM calls WHERE time < ?)", [cutoff, cutoff]), ("time < ?", [cutoff])

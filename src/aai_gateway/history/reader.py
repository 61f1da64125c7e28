"""Reading the call history: each query on a connection of its own, apart from the writer's, read-only;
in WAL mode a read never holds up a write. A reader that finds a history an older aai-gateway wrote
brings it up to this schema first (see history/schema.py), and one that finds records in the journal
moves them into the calls table first, in a short write of its own (see history/journal.py)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Unpack

from aai_gateway.history import journal, runs, stats
from aai_gateway.history.record import Record
from aai_gateway.history.rows import COLUMNS, Filters, conditions, record_of
from aai_gateway.history.schema import (
    BUSY_TIMEOUT_MS,
    SCHEMA_VERSION,
    HistoryUnavailable,
    corrupt,
    migrate,
    newer,
    reason,
)

log = logging.getLogger(__name__)

EXPORT_BATCH = 500
"""Rows an export reads from its cursor at a time."""


class HistoryReader:
    """Answers queries about the history at `path`; opens nothing until asked, and finds no history there
    until a writer made one."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def query(self, *, limit: int | None = 100, offset: int = 0, **filters: Unpack[Filters]) -> list[Record]:
        """Records matching every filter given, newest first; `since` and `until` are inclusive."""
        where, params = _filtered(filters)
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be 0 or more, got {limit}")
        if offset < 0:
            raise ValueError(f"offset must be 0 or more, got {offset}")
        sql = f"SELECT {COLUMNS} FROM calls{where} ORDER BY time DESC, seq DESC LIMIT ? OFFSET ?"  # noqa: S608
        with self._reader() as conn:
            if conn is None:
                return []
            rows = conn.execute(sql, [*params, -1 if limit is None else limit, offset]).fetchall()
        return [record_of(row) for row in rows]

    def count(self, **filters: Unpack[Filters]) -> int:
        where, params = _filtered(filters)
        with self._reader() as conn:
            if conn is None:
                return 0
            found: int = conn.execute(f"SELECT count(*) FROM calls{where}", params).fetchone()[0]  # noqa: S608
        return found

    def stats(
        self, since: datetime, until: datetime, *, app: str | None = None, tool: str | None = None
    ) -> stats.Stats:
        """Usage statistics of the calls from `since` to `until` (see history/stats.py), on a connection of
        its own: reading in WAL mode never holds up a write. Call it off the event loop."""
        with self._reader() as conn:
            if conn is None:
                return stats.empty(since, until, app, tool)
            return stats.gather(conn, since, until, app, tool)

    def tool_counts(self, since: datetime, until: datetime) -> dict[tuple[str, str], tuple[int, int]]:
        """(app, tool) -> (calls, failed calls) from `since` to `until`, from the hourly counts. Off the event loop."""
        with self._reader() as conn:
            return {} if conn is None else stats.tool_counts(conn, since, until)

    def export(self, **filters: Unpack[Filters]) -> Iterator[Record]:
        """Every record matching the filters, in the order they were recorded, a batch at a time.

        Each batch is a query of its own that goes on after the last row read (by `seq`), so memory stays the
        same whatever the history's size, and no read stays open while a slow client downloads: an open read
        would hold up the writer's checkpoints, and calls with them.
        """
        where, params = _filtered(filters)
        where = f"{where} AND seq > ?" if where else " WHERE seq > ?"
        sql = f"SELECT seq, {COLUMNS} FROM calls{where} ORDER BY seq LIMIT {EXPORT_BATCH}"  # noqa: S608
        last = 0
        while True:
            with self._reader() as conn:
                if conn is None:
                    return
                rows = conn.execute(sql, [*params, last]).fetchall()
            yield from (record_of(row[1:]) for row in rows)
            if len(rows) < EXPORT_BATCH:
                return
            last = rows[-1][0]

    def get(self, call_id: str) -> Record | None:
        with self._reader() as conn:
            if conn is None:
                return None
            row = conn.execute(f"SELECT {COLUMNS} FROM calls WHERE id = ?", (call_id,)).fetchone()  # noqa: S608
        return None if row is None else record_of(row)

    def entries(self, *, limit: int = 100, offset: int = 0, **filters: Unpack[Filters]) -> list[runs.Entry]:
        """What a listing shows, newest first: calls, and runs with their first steps beneath them (a run
        matches the filters when one of its steps does); see history/runs.py."""
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must be 0 or more, got {limit} and {offset}")
        where = conditions(**filters)
        with self._reader() as conn:
            return [] if conn is None else runs.entries(conn, where, limit, offset)

    def count_entries(self, **filters: Unpack[Filters]) -> int:
        """How many entries `entries` finds with these filters, on all its pages."""
        where = conditions(**filters)
        with self._reader() as conn:
            return 0 if conn is None else runs.count_entries(conn, where)

    def children(self, run_id: str, limit: int | None = None) -> tuple[list[Record], int]:
        """A run's steps and undos in the order they started (the first `limit`), and how many it has."""
        with self._reader() as conn:
            if conn is None:
                return [], 0
            return runs.children(conn, run_id, limit), runs.child_counts(conn, [run_id]).get(run_id, 0)

    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection | None]:
        """A read-only connection, or None while there is no history yet."""
        if not self.path.exists():
            yield None
            return
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as exc:
            raise HistoryUnavailable(f"cannot open {self.path}: {exc}") from exc
        try:
            conn.execute("PRAGMA query_only = ON")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise HistoryUnavailable(newer(self.path, version))
            if 0 < version < SCHEMA_VERSION:
                self._upgrade(version)
            if version and journal.waiting(conn, self.path):
                self._fold()
            yield conn if version else None
        except sqlite3.Error as exc:
            if corrupt(exc):
                raise HistoryUnavailable(
                    f"{self.path} is corrupt ({exc}); the gateway moves it aside to "
                    f"{self.path.name}.corrupt-<UTC time> and starts a new one when it next writes it"
                ) from exc
            raise HistoryUnavailable(f"cannot read {self.path}: {reason(exc, self.path.parent)}") from exc
        finally:
            conn.close()

    def _fold(self) -> None:
        """Move the journal's records into the calls table, for the query to see every call committed. A
        history this process may not write (another user's, a read-only copy) is read as it is: without
        the calls still in the journal."""
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            try:
                conn.execute("PRAGMA wal_autocheckpoint = 0")  # the database file is the gateway's writer's to change
                with journal.folding(conn, self.path):
                    pass
            finally:
                conn.close()
        except sqlite3.Error as exc:
            if corrupt(exc):
                raise
            log.debug("reading %s without the calls still in its journal: %s", self.path, exc)

    def _upgrade(self, version: int) -> None:
        """Bring a history an older aai-gateway wrote up to this schema, for a reader that finds one before
        any gateway of this version opened it (`aai-gateway history` right after an upgrade)."""
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            try:
                migrate(conn, self.path)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise HistoryUnavailable(
                f"{self.path} holds call history schema {version}, and bringing it up to {SCHEMA_VERSION} "
                f"failed: {reason(exc, self.path.parent)}"
            ) from exc


def _filtered(filters: Filters) -> tuple[str, list[Any]]:
    """The filters as a WHERE clause ("" for none) and its parameters."""
    found, params = conditions(**filters)
    return (f" WHERE {found}" if found else ""), params

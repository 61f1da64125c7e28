"""The calls journal: where a call's record is committed before its answer goes back, and moved from into
the calls table later, away from the call.

A record committed straight into `calls` changes the table and its indexes (the unique id, three time
indexes, and for a run's step the index of runs): 25 KB of write-ahead log a commit, measured, and that
commit was the largest part of a call's cost. The journal has no index beside its row ids, so a record
changes one page: on a 2-core machine, inside the gateway, the commit took 62-64 µs of the event loop's
CPU into `calls` and 37-41 µs into the journal.

Records are moved (`fold`) in one transaction by whoever reads or counts the calls next: the writer
thread before it counts new calls (each checkpoint, every CHECKPOINT_EVERY records), before a purge
and when it stops, and each reader before its query (history/reader.py). A reader thus always sees
every committed call, and the journal never holds more than about CHECKPOINT_EVERY records. A record
committed twice (the writer commits again what a replaced file lost) is moved once: `calls.id` is
unique and the move ignores a second copy.
"""

from __future__ import annotations

import sqlite3

from aai_gateway.history.rows import COLUMNS

SCHEMA = (
    """CREATE TABLE calls_journal (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        time TEXT NOT NULL,
        caller TEXT NOT NULL,
        transport TEXT NOT NULL,
        app TEXT NOT NULL,
        tool TEXT NOT NULL,
        args TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'error')),
        error_code INTEGER,
        error_type TEXT,
        error_detail TEXT,
        duration_ms REAL NOT NULL,
        result TEXT,
        result_truncated INTEGER NOT NULL DEFAULT 0,
        consent TEXT,
        parent TEXT,
        step TEXT
    )""",
)
INSERT = f"INSERT INTO calls_journal ({COLUMNS}) VALUES ({', '.join('?' * len(COLUMNS.split(',')))})"  # noqa: S608
_MOVE = f"INSERT OR IGNORE INTO calls ({COLUMNS}) SELECT {COLUMNS} FROM calls_journal ORDER BY seq"  # noqa: S608


def fold(conn: sqlite3.Connection) -> int:
    """Move the journal's records into the calls table, in the order they were committed; how many were
    there. In a write transaction."""
    if not waiting(conn):
        return 0
    conn.execute(_MOVE)
    moved: int = conn.execute("DELETE FROM calls_journal").rowcount
    return moved


def waiting(conn: sqlite3.Connection) -> bool:
    """Whether the journal holds records not yet in the calls table."""
    return conn.execute("SELECT 1 FROM calls_journal LIMIT 1").fetchone() is not None

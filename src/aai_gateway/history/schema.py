"""The history's schema: its tables and indexes, the migrations from each older version (run by the writer
when it opens the file, and by a reader that finds an older file first), and what a SQLite error means.

The store in two rooms: history/writer.py writes (one writer thread, commits on the event loop into the
journal of history/journal.py, recovery, checkpoints, retention), history/reader.py reads (queries,
statistics, export, runs); history/store.py joins them as `HistoryStore`.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from aai_gateway.history import runs, stats

SCHEMA_VERSION = 5
BUSY_TIMEOUT_MS = 5000
LOW_SPACE = 64 * 1024
"""Free bytes under which a disk I/O error is taken for a full disk."""
SCHEMA = (
    """CREATE TABLE calls (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
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
        result_truncated INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX calls_time ON calls (time)",
    "CREATE INDEX calls_app_time ON calls (app, time)",
    "CREATE INDEX calls_caller_time ON calls (caller, time)",
)
JOURNAL_TABLE = (
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
"""Schema 5's journal table: the calls table's columns and constraints, without its indexes."""
MIGRATIONS: dict[int, tuple[str | Callable[[sqlite3.Connection], None], ...]] = {
    # 1 -> 2: the consent question a call asked; the hourly counts, indexes and triggers `stats` reads.
    2: ("ALTER TABLE calls ADD COLUMN consent TEXT", *stats.SCHEMA),
    # 2 -> 3: the run a call is a step or an undo of, and the step's label (see history/runs.py).
    3: (
        "ALTER TABLE calls ADD COLUMN parent TEXT",
        "ALTER TABLE calls ADD COLUMN step TEXT",
        *runs.SCHEMA,
    ),
    # 3 -> 4: duration sketches and consent counts per hour, for the two indexes they replace (see
    # history/stats.py), made for the calls already counted.
    4: (*stats.SKETCHES, stats.backfill),
    # 4 -> 5: the table calls were first committed to before their answer; the journal is a file since
    # (history/journal.py), which still moves what this table holds.
    5: JOURNAL_TABLE,
}
"""The statements that bring a history of the version before each key to that version."""


class HistoryUnavailable(Exception):
    """The history database cannot be opened, written or read."""


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    with transaction(conn):
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise HistoryUnavailable(newer(path, version))
        if version == 0:
            for statement in SCHEMA:
                conn.execute(statement)
            version = 1
        for step in range(version + 1, SCHEMA_VERSION + 1):
            for change in MIGRATIONS[step]:
                if callable(change):
                    change(conn)
                else:
                    conn.execute(change)
        if version != SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction taking the lock at once, committed, or rolled back on any failure."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


def newer(path: Path, version: int) -> str:
    return f"{path} holds call history schema {version}, newer than this aai-gateway reads ({SCHEMA_VERSION})"


def result_code(exc: BaseException) -> int | None:
    """SQLite's primary result code of `exc` (Python gives the extended one)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def corrupt(exc: BaseException) -> bool:
    return result_code(exc) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def reason(exc: BaseException, folder: Path) -> str:
    """What went wrong, in words a user acts on."""
    code = result_code(exc)
    full = code == sqlite3.SQLITE_FULL or getattr(exc, "errno", None) == errno.ENOSPC
    if not full and code == sqlite3.SQLITE_IOERR:  # growing the shared-memory index of a full disk fails so
        with suppress(OSError):
            full = shutil.disk_usage(folder).free < LOW_SPACE
    if full:
        return f"disk full ({exc})"
    if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN) or isinstance(exc, PermissionError):
        return f"cannot write to its folder or file, read-only? ({exc})"
    return str(exc)

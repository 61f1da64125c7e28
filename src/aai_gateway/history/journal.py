"""The calls journal: where a call's record is committed before its answer goes back, and moved from into
the calls table later, away from the call.

The journal is a file beside the database, `history.journal`: each record one line of JSON (its row
of the calls table), appended by the event loop (`Appender`) with one `write`. That write is as
durable as a SQLite commit in WAL mode with `synchronous=NORMAL`, which it replaces: the record is in
the file once the write returns, and survives the gateway being killed (a power cut may lose the last
ones). A commit into SQLite cost the loop more than anything else a call does (37-41 µs of its CPU
into a table without indexes, the journal before this file).

Records are moved (`folding`) in one transaction by whoever reads or counts the calls next: the writer
thread before it counts new calls (each checkpoint: after CHECKPOINT_EVERY records, once the calls
pause, see history/writer.py), before a purge and when it stops, and each reader before its query
(history/reader.py). A reader thus sees every committed call, and the journal never holds more than
about MOST_WAITING records. The mover
claims the file by renaming it into `history.journal.d/` before it reads it, so appenders go on in a
new file; one that finds, after its write, that the path no longer names the file it wrote (claimed
meanwhile, perhaps read already, or deleted) writes the records again in the file now there. Every
write that ended before the rename is in what the mover reads, and every other is written again. A
claimed file is deleted once its records are committed to the calls table; one left by a mover that
died is moved by the next. A record moved twice (written again, or committed again by the writer
thread after a failed append) lands once: `calls.id` is unique, and the move ignores a second copy.

Each write starts with a newline, so a write cut short (a full disk) leaves a broken line that the
next write cannot run into; lines that are not a calls-table row are skipped, and said.

On Windows, where a file open in one process cannot be renamed by another, there is no appender: the
writer thread commits every record. The table `calls_journal` is the journal of schema 5's first
gateways; what they left there is moved too.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import sqlite3
import stat
import sys
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from aai_gateway import json_text
from aai_gateway.history.record import Record
from aai_gateway.history.rows import COLUMNS, stored_head, stored_tail
from aai_gateway.history.schema import transaction

log = logging.getLogger(__name__)

SUFFIX = ".journal"
CLAIMED = ".d"
"""Beside the journal, the folder (`history.journal.d`) the files claimed by movers are renamed into."""
WIDTH = len(COLUMNS.split(","))
PIECE = 16
"""Lines read, parsed and inserted by one statement at most while moving a file (17 parameters a row)."""
_ENCODER = json_text.encoder(compact=True)
_TABLE_MOVE = f"INSERT OR IGNORE INTO calls ({COLUMNS}) SELECT {COLUMNS} FROM calls_journal ORDER BY seq"  # noqa: S608


def file_of(database: Path) -> Path:
    return database.with_suffix(SUFFIX)


def encoded(records: Iterable[Record]) -> bytes:
    """The records as journal lines, each after a newline."""
    lines = ["\n" + _line(record) for record in records]
    return "".join(lines).encode("utf-8", "surrogatepass")


def encoded_head(record: Record) -> str:
    """The start of the record's journal line, up to its arguments: all that is known of a call before it
    ends, worked out while its app works (`Recorder.prepare`)."""
    return _ENCODER(stored_head(record))[:-1]


def _line(record: Record) -> str:
    head = record.encoded_head if record.encoded_head is not None else encoded_head(record)
    return head + "," + _ENCODER(stored_tail(record))[1:]


class Appender:
    """The event loop's side: appends records to the journal of `database`."""

    def __init__(self, database: Path) -> None:
        self.path = os.fspath(file_of(database))
        self._fd: int | None = None
        self._id: tuple[int, int] | None = None

    @staticmethod
    def usable() -> bool:
        return sys.platform != "win32"

    def append(self, records: Iterable[Record]) -> bool:
        """Write the records; False when the path keeps changing under it (the caller commits them some other
        way). Raises OSError when the file cannot be opened or written."""
        data = encoded(records)
        for _ in range(3):
            fd = self._fd if self._fd is not None else self._open()
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"{self.path}: {written} of {len(data)} bytes written")
            try:
                st = os.stat(self.path)  # noqa: PTH116 - once per commit: without pathlib's overhead
                if (st.st_dev, st.st_ino) == self._id:
                    return True
            except FileNotFoundError:
                pass
            self.close()  # claimed by a mover, or deleted: again, in the file now at the path
        return False

    def close(self) -> None:
        if self._fd is not None:
            with suppress(OSError):
                os.close(self._fd)
            self._fd = None
            self._id = None

    def _open(self) -> int:
        # The history holds what agents did with the user's apps: readable by the user alone.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        st = os.fstat(fd)
        self._fd, self._id = fd, (st.st_dev, st.st_ino)
        return fd


def waiting(conn: sqlite3.Connection, database: Path) -> bool:
    """Whether records wait to be moved into the calls table: in the journal, in files claimed by a mover
    that has not finished (or died), or in the first journal's table."""
    journal = file_of(database)
    try:
        if _holds_records(journal.lstat()):
            return True
    except OSError:
        pass
    if any(_claimed_files(journal)):
        return True
    return conn.execute("SELECT 1 FROM calls_journal LIMIT 1").fetchone() is not None


@contextmanager
def folding(conn: sqlite3.Connection, database: Path) -> Iterator[int]:
    """A write transaction that starts by moving every waiting record into the calls table; yields how
    many there were. The files moved are deleted once the transaction is committed."""
    moved_files: list[Path] = []
    with transaction(conn):
        moved = 0
        if conn.execute("SELECT 1 FROM calls_journal LIMIT 1").fetchone() is not None:
            conn.execute(_TABLE_MOVE)
            moved += conn.execute("DELETE FROM calls_journal").rowcount
        for claimed in _claim(file_of(database)):
            count = _move(conn, claimed)
            if count is not None:
                moved += count
                moved_files.append(claimed)
        yield moved
    for claimed in moved_files:
        with suppress(FileNotFoundError):
            claimed.unlink()


def _claim(journal: Path) -> list[Path]:
    """The files to move: those left in the claimed folder (oldest first), then the journal itself, each
    renamed to a name of this mover's (a file two movers claim is moved by both, and lands once)."""
    folder = journal.with_name(journal.name + CLAIMED)
    claimed: list[Path] = []
    for left in sorted(_claimed_files(journal), key=_age):
        mine = folder / _unique()
        try:
            left.rename(mine)
        except OSError:
            continue  # claimed by another mover meanwhile
        claimed.append(mine)
    try:
        if not _holds_records(journal.lstat()):
            return claimed
        folder.mkdir(mode=0o700, exist_ok=True)
        mine = folder / _unique()
        journal.rename(mine)
        claimed.append(mine)
    except FileNotFoundError:
        pass  # none yet, or claimed by another mover
    except OSError as exc:
        log.debug("cannot claim %s: %s", journal, exc)
    return claimed


def _claimed_files(journal: Path) -> list[Path]:
    try:
        with os.scandir(journal.with_name(journal.name + CLAIMED)) as entries:
            return [Path(entry.path) for entry in entries if entry.is_file(follow_symlinks=False)]
    except OSError:
        return []


def _holds_records(st: os.stat_result) -> bool:
    """A regular file with something in it: the journal's path may hold anything (a folder, a link)."""
    return stat.S_ISREG(st.st_mode) and st.st_size > 0


def _age(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _unique() -> str:
    return f"{os.getpid()}-{uuid.uuid4().hex}"


def _move(conn: sqlite3.Connection, claimed: Path) -> int | None:
    """Insert the rows of a claimed file into the calls table (in the caller's transaction); how many lines
    held one, or None when it cannot be read (it stays, said). Broken lines (a write cut short) and lines
    that are not rows are skipped, and said."""
    moved = broken = 0
    try:
        with claimed.open("rb") as file:
            chunk: list[bytes] = []
            for line in itertools.chain(file, [b""]):
                if line.strip():
                    chunk.append(line)
                if chunk and (len(chunk) >= PIECE or not line):
                    rows = _insert(conn, _rows(chunk))
                    moved += len(rows)
                    broken += len(chunk) - len(rows)
                    chunk = []
    except FileNotFoundError:
        return 0  # moved by another mover already
    except OSError as exc:
        log.warning("cannot read %s of the call journal: %s", claimed, exc)
        return None
    if broken:
        log.warning("%s: %d line(s) of the call journal were not call records, skipped", claimed.name, broken)
    return moved


def _rows(lines: list[bytes]) -> list[list[Any]]:
    """The rows the lines hold, as far as their shape tells: parsed at once, else (a broken line among them)
    one by one, skipping those that are not rows."""
    try:
        rows = json.loads(b"[" + b",".join(lines) + b"]")
        if all(type(row) is list and len(row) == WIDTH for row in rows):
            return rows  # type: ignore[no-any-return]
    except ValueError:
        pass
    found = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if type(row) is list and len(row) == WIDTH:
            found.append(row)
    return found


def _insert(conn: sqlite3.Connection, rows: list[list[Any]]) -> list[list[Any]]:
    """Insert the rows (PIECE at most), many to a statement; those inserted. SQLite works on each statement
    with the interpreter's lock let go once, where a statement a row (executemany) would take the lock back
    after every row, away from the event loop's thread. The statements take a power of two of rows: each
    size is prepared once and kept by the connection (one of 1,000 rows holds 1.5-3.5 MB). A value SQLite
    cannot take (a list, an integer beyond 64 bits) fails its statement before it runs: those rows are then
    checked one by one."""
    inserted: list[list[Any]] = []
    start = 0
    while start < len(rows):
        size = 1 << ((len(rows) - start).bit_length() - 1)
        piece = rows[start : start + size]
        start += size
        try:
            conn.execute(_statement(size), [value for row in piece for value in row])
            inserted += piece
        except (sqlite3.ProgrammingError, sqlite3.InterfaceError, OverflowError, ValueError):
            for row in piece:
                if all(type(value) in _SCALARS for value in row):
                    with suppress(OverflowError, ValueError):
                        conn.execute(_statement(1), row)
                        inserted.append(row)
    return inserted


_SCALARS = frozenset({str, int, float, type(None)})


@functools.cache  # PIECE and the powers of two below it
def _statement(rows: int) -> str:
    one = "(" + ", ".join("?" * WIDTH) + ")"
    return f"INSERT OR IGNORE INTO calls ({COLUMNS}) VALUES {', '.join([one] * rows)}"  # noqa: S608

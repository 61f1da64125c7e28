"""Writing the call history in SQLite: `<AAI home>/history.db`, WAL mode, one writer thread (readers have
connections of their own: history/reader.py).

`write` returns once its call's record is committed to the journal (history/journal.py: a file the
event loop appends to, moved into the database by the writer thread and by readers), so whatever a
client received is in the history even if the gateway is killed. A record is committed

- by the event loop, appended to the journal: the records of the calls that end in one turn of the
  loop share one write, and a call that ends alone is written at once, without waiting for the turn
  to end;
- else by the writer thread, straight into the calls table (the journal cannot be written, or the
  database is in trouble), which takes whatever has queued up, commits it in one transaction and
  waits for the lock as long as it must.

When the database cannot be written the records wait in memory (MAX_WAITING at most, the oldest
dropped and counted) and the writer thread tries again every RETRY_EVERY seconds and with each new
record; `trouble` says why meanwhile, and a small status file (`history.status` beside the database,
else in the temporary folder) tells `aai-gateway history` in another process. A database deleted
while running is created again, one found corrupt (at start or while running) is moved aside to
`history.db.corrupt-<UTC time>` and started afresh: before each of its writes the writer checks the
file with one `stat` (same inode, size and modification time as it last saw, else its header is
read), and what the journal holds is moved into the new file.

The writer thread also moves the journal and checkpoints the log once CHECKPOINT_EVERY records were
committed on the loop and the calls pause for QUIET seconds, or MOST_WAITING records if they do not
pause, and deletes records older than the retention period when it starts and every hour after. Moving
2,000 records takes 15-40 ms of CPU; done while calls run, on a machine with two cores it took a fifth
of the calls a second 16 calls in flight made (bench.exec_latency), which a burst of calls (a plan, a
batch, an agent's run of steps) no longer pays for. A reader moves what waits before it reads.

Why not the writer thread alone, which would be simpler: handing each record to a thread and back
costs more than the commit, and the benchmarks say so. Measured on 2026-11-24 on a shared 2-core
machine with other work running (so noisy), this store against a writer thread alone (records queued,
each batch committed in one transaction, its waiting calls woken with one call_soon_threadsafe per
loop), runs interleaved, every run in the commit that wrote this:

- bench.history_cost, cost of recording a call (p50): 0.045-0.061 ms here, 0.12-0.22 ms with the
  thread alone; 2,000 writes at once: 29,800-50,700 records/s here, 18,600-30,000 with the thread.
- bench.exec_latency, aai_exec over stdio, raw client, p50: 0.622-0.674 ms here (6 runs, median
  0.650), 0.671-0.826 ms with the thread (4 runs, median 0.709: +9 %; the pairs +3, -0, +15, +25 %).
  16 calls in flight: raw client even (median 2,880 calls/s here, 2,898 with the thread), SDK client
  median 1,688 here, 1,483 with the thread (-12 %), both within wide spreads.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import logging
import os
import queue
import sqlite3
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import Future, InvalidStateError
from contextlib import suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aai_gateway.history import stats
from aai_gateway.history.journal import Appender, folding
from aai_gateway.history.record import Record, iso, now
from aai_gateway.history.rows import INSERT, stored_row
from aai_gateway.history.schema import (
    BUSY_TIMEOUT_MS,
    HistoryUnavailable,
    corrupt,
    migrate,
    reason,
    transaction,
)
from aai_gateway.processes import alive

log = logging.getLogger(__name__)

PURGE_EVERY = 3600.0
MAX_BATCH = 1000
CHECKPOINT_EVERY = 2000
"""Records committed on the event loop after which the writer thread moves the journal and checkpoints,
once the calls pause (QUIET)."""
QUIET = 0.2
"""Seconds without a record appended that make a pause in the calls."""
MOST_WAITING = 20_000
"""Records appended on the loop after which the writer thread moves the journal though the calls go on."""
WAL_LIMIT = 4 * 1024 * 1024
"""Bytes the write-ahead log is cut back to whenever a checkpoint lets it start over."""
MAX_WAITING = 10_000
"""Records kept in memory while the database cannot be written; beyond, the oldest are dropped."""
RETRY_EVERY = 2.0
"""Seconds between two attempts to write the waiting records while the database cannot be written."""
STATUS_SUFFIX = ".status"
MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True, slots=True)
class Trouble:
    """Why the history cannot be written, since when, and the records waiting in memory or dropped."""

    reason: str
    since: str
    waiting: int
    dropped: int
    pid: int = 0

    def describe(self) -> str:
        lost = f", {self.dropped} dropped (the oldest)" if self.dropped else ""
        return (
            f"the call history cannot be written since {self.since}: {self.reason}; "
            f"{self.waiting} record(s) wait in memory{lost}"
        )


Signature = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class _Job:
    kind: str
    """"record", "barrier" (done when everything queued before it is), "purge", "checkpoint" or "stop"."""
    done: Future[Any]
    record: Record | None = None


class HistoryWriter:
    """Records calls in the history at `path`: nothing is opened until the first write or `start`."""

    def __init__(self, path: Path, retention_days: float = 30.0) -> None:
        self.path = path
        self.retention_days = retention_days
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._here: Appender | None = None
        self._generation = 0
        """Counts the writer's (re)openings of the database; the loop tries the journal again after one."""
        self._here_failed_at = -1
        self._signature: Signature | None = None
        self._waiting: deque[Record] = deque(maxlen=MAX_WAITING)
        self._dropped = 0
        self._trouble: Trouble | None = None
        self._next_purge = 0.0
        self._drops_logged = -RETRY_EVERY
        self._queued: list[tuple[Record, asyncio.Future[Future[None] | None]]] = []
        self._since_checkpoint = 0
        self._appended_at = 0.0
        self._pause: tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = None
        """The loop and the timer that looks for a pause in the calls, while one is looked for."""
        self._uncounted = 0
        """Records the writer thread committed since the hourly counts were last brought up to date."""

    # Writing

    def start(self) -> None:
        """Open (creating it if needed) and purge now rather than on the first write."""
        self._submit("barrier").result()

    def submit(self, record: Record) -> Future[None]:
        """Queue `record`; the future is done once it is committed (or has an exception if it could not be)."""
        return self._submit("record", record)

    async def write(self, record: Record, *, alone: bool = False) -> None:
        """Commit `record` and return; `alone` when no other call is running (see the module's account)."""
        if alone and not self._queued:
            (handed_over,) = self._commit_or_hand_over([record])
        else:
            handed_over = await self.queue(record)
        if handed_over is not None:
            await asyncio.wrap_future(handed_over)

    def queue(self, record: Record) -> asyncio.Future[Future[None] | None]:
        """Commit `record` on the event loop just after this turn, with the records of the other calls that
        end in it; done then, holding the writer thread's future when the loop handed the records over."""
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[Future[None] | None] = loop.create_future()
        self._queued.append((record, turn))
        if len(self._queued) == 1:
            loop.call_soon(self._commit_queued)
        return turn

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every record submitted so far is committed."""
        self._submit("barrier").result(timeout)

    def purge(self) -> int:
        """Delete records older than the retention period now; return how many."""
        deleted: int = self._submit("purge").result()
        return deleted

    def close(self, timeout: float = 10) -> None:
        """Commit what is queued and stop the writer, which moves the journal as it stops; a later write
        starts it again."""
        self._since_checkpoint = 0  # a pause looked for meanwhile has nothing to move
        self._close_here()
        with self._lock:
            thread = self._thread
            if thread is None:
                return
            self._jobs.put(_Job("stop", Future()))
            thread.join(timeout)
            self._thread = None
            atexit.unregister(self.close)

    async def aclose(self) -> None:
        if self._queued:  # not committed yet by the loop: now, before the writer stops
            self._commit_queued()
        if self._pause is not None:
            self._pause[1].cancel()
            self._pause = None
        self._close_here()  # on the loop, which alone uses it, not in the thread that stops the writer
        await asyncio.to_thread(self.close)

    def trouble(self) -> Trouble | None:
        """Why the history cannot be written now, or None while it can."""
        return self._trouble

    @property
    def status_files(self) -> tuple[Path, Path]:
        """Where a gateway says its history cannot be written: beside the database, else in the temporary folder."""
        tag = hashlib.sha256(str(self.path.resolve()).encode()).hexdigest()[:16]
        spare = Path(tempfile.gettempdir()) / f"aai-history-{os.getuid() if hasattr(os, 'getuid') else 0}-{tag}"
        return self.path.with_name(self.path.name + STATUS_SUFFIX), spare.with_suffix(STATUS_SUFFIX)

    def reported_trouble(self) -> Trouble | None:
        """What a gateway's status file says, for a reader in another process; None when all is well."""
        for file in self.status_files:
            try:
                data = json.loads(file.read_text("utf-8"))
                return Trouble(**{k: data[k] for k in ("reason", "since", "waiting", "dropped", "pid")})
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return None

    # Committing on the event loop

    def _commit_queued(self) -> None:
        """The records of the calls that ended in this turn of the loop, in one transaction."""
        queued, self._queued = self._queued, []
        if not queued:  # committed already (by `aclose`)
            return
        handed_over = self._commit_or_hand_over([record for record, _ in queued])
        for (_, turn), writer in zip(queued, handed_over, strict=True):
            if not turn.done():  # its call was cancelled: the record is committed all the same
                turn.set_result(writer)

    def _commit_or_hand_over(self, records: list[Record]) -> list[Future[None] | None]:
        """None for each record when they are committed here, else the writer thread's future for each."""
        if self._commit_now(records):
            return [None] * len(records)
        return [self.submit(record) for record in records]

    def _commit_now(self, records: list[Record]) -> bool:
        """Append to the journal file; False when it would not take them (the database is in trouble, or the
        file cannot be written)."""
        if self._trouble is not None:
            return False
        appender = self._appender_here()
        if appender is None:
            return False
        try:
            if not appender.append(records):
                return False
        except OSError as exc:
            log.debug("committing on the writer thread after: %s", exc)
            self._close_here(broken=True)
            return False
        self._since_checkpoint += len(records)
        if self._since_checkpoint >= CHECKPOINT_EVERY:
            self._checkpoint_at_pause()
        return True

    def _checkpoint_at_pause(self) -> None:
        """Have the writer thread move the journal and checkpoint once the calls pause, or now when
        MOST_WAITING records wait (see the module's account)."""
        self._appended_at = time.monotonic()
        if self._since_checkpoint >= MOST_WAITING:
            self._checkpoint()
        elif self._pause is None or self._pause[0].is_closed():  # none yet, or one of a loop closed since
            loop = asyncio.get_running_loop()
            self._pause = (loop, loop.call_later(QUIET, self._paused))

    def _paused(self) -> None:
        if self._pause is None:
            return
        loop, _ = self._pause
        left = self._appended_at + QUIET - time.monotonic()
        if left > 0:
            self._pause = (loop, loop.call_later(left, self._paused))
        elif self._since_checkpoint >= CHECKPOINT_EVERY:  # not moved meanwhile (by `close`)
            self._checkpoint()
        else:
            self._pause = None

    def _checkpoint(self) -> None:
        """Queued behind one still under way, if need be."""
        self._since_checkpoint = 0
        if self._pause is not None:
            self._pause[1].cancel()
            self._pause = None
        self._submit("checkpoint")

    def _appender_here(self) -> Appender | None:
        if self._here is None and self._here_failed_at != self._generation and Appender.usable():
            try:
                self.start()  # the writer thread creates and migrates the database first
            except HistoryUnavailable as exc:
                log.debug("committing on the writer thread: %s", exc)
                self._close_here(broken=True)
                return None
            self._here = Appender(self.path)
        return self._here

    def _close_here(self, *, broken: bool = False) -> None:
        if self._here is not None:
            self._here.close()
            self._here = None
        self._here_failed_at = self._generation if broken else -1

    # The writer thread

    def _submit(self, kind: str, record: Record | None = None) -> Future[Any]:
        job = _Job(kind, Future(), record)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="aai-history", daemon=True)
                self._thread.start()
                atexit.register(self.close)
            self._jobs.put(job)
        return job.done

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        while True:
            if self._trouble is not None:
                wait: float | None = RETRY_EVERY
            else:
                wait = None if conn is None else max(0.0, self._next_purge - time.monotonic())
            try:
                batch = [self._jobs.get(timeout=wait)]
            except queue.Empty:
                if self._trouble is not None:
                    conn = self._commit(conn, [])
                elif conn is not None:
                    self._purge_quietly(conn)
                continue
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self._jobs.get_nowait())
                except queue.Empty:
                    break
            conn = self._commit(conn, batch)
            if any(job.kind == "stop" for job in batch):
                if conn is not None:
                    self._count_now(conn)  # a history left at rest holds every record in the calls table
                    conn.close()
                return

    def _commit(self, conn: sqlite3.Connection | None, batch: list[_Job]) -> sqlite3.Connection | None:
        """Insert the waiting records and the batch's in one transaction, then answer every job of the batch."""
        records = [*self._waiting, *(job.record for job in batch if job.record is not None)]
        self._waiting.clear()
        opened = self._generation
        conn, error = self._store(conn, records)
        if conn is not None and self._generation != opened:  # at start (or when it was created again)
            self._purge_quietly(conn)
            left = self.reported_trouble()
            if left is not None and self._trouble is None and not alive(left.pid):
                self._report(None)  # said by a gateway that has ended; `history` told of its lost records
        failure = None if error is None else HistoryUnavailable(reason(error, self.path.parent))
        if failure is None:
            self._uncounted += len(records)
            if conn is not None and self._uncounted >= CHECKPOINT_EVERY:
                self._count_now(conn)
            self._recovered(len(records))
        else:
            self._failed(failure, records)
        for job in batch:
            if job.kind == "record":
                _settle(job.done, failure)
            elif job.kind == "checkpoint":
                if conn is not None:
                    self._checkpoint_now(conn)
                _settle(job.done)
            elif job.kind == "purge" and conn is not None:
                try:
                    _settle(job.done, value=self._purge(conn))
                except sqlite3.Error as exc:
                    _settle(job.done, HistoryUnavailable(str(exc)))
            else:
                _settle(job.done, failure if job.kind in ("purge", "barrier") else None)
        return conn

    def _store(
        self, conn: sqlite3.Connection | None, records: list[Record]
    ) -> tuple[sqlite3.Connection | None, BaseException | None]:
        """Commit `records`, opening the database again when it was deleted or replaced, and moving a corrupt
        one aside; the connection to go on with, or None and what went wrong."""
        for attempt in range(3):
            try:
                if conn is not None and self._replaced():
                    conn.close()
                    conn = None
                if conn is None:
                    conn = self._open()
                if records:
                    _insert(conn, records)
                if not self._replaced():
                    self._signature = _signature(self.path)
                    return conn, None
                log.warning("%s was deleted or replaced while being written; writing it again", self.path)
            except (sqlite3.Error, OSError, HistoryUnavailable) as exc:
                if conn is not None:
                    _close_quietly(conn)
                    conn = None
                if not (corrupt(exc) and attempt < 2):
                    return None, exc
                self._move_aside(exc)
            if conn is not None:
                _close_quietly(conn)
                conn = None
        return None, HistoryUnavailable(f"{self.path} keeps being replaced while written")

    def _replaced(self) -> bool:
        """Whether the file is no longer the one last written: gone, another inode, or corrupt."""
        seen = _signature(self.path)
        if seen == self._signature:
            return False
        if seen is None or self._signature is None or seen[:2] != self._signature[:2]:
            return True
        try:  # same file, changed by a checkpoint (of another gateway too) or written over
            with self.path.open("rb") as file:
                header = file.read(len(MAGIC))
        except OSError:
            return True
        if header != MAGIC:
            self._move_aside(HistoryUnavailable("its header is not SQLite's"))
            return True
        self._signature = seen
        return False

    def _move_aside(self, why: BaseException) -> None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            self.path.rename(aside)
        except FileNotFoundError:
            return
        except OSError as exc:
            log.error("%s is corrupt (%s) and cannot be moved aside: %s", self.path, why, exc)
            return
        for suffix in ("-wal", "-shm"):
            with suppress(OSError):
                self.path.with_name(self.path.name + suffix).rename(aside.with_name(aside.name + suffix))
        log.error("%s is corrupt (%s): moved aside to %s; a new history starts", self.path, why, aside.name)

    def _failed(self, failure: HistoryUnavailable, records: list[Record]) -> None:
        dropped = max(0, len(records) - MAX_WAITING)
        self._waiting.extend(records)
        self._dropped += dropped
        before = self._trouble
        since = before.since if before is not None else iso(now())
        self._trouble = Trouble(str(failure), since, len(self._waiting), self._dropped, os.getpid())
        if before is None or before.reason != self._trouble.reason:
            log.error("%s; calls go on", self._trouble.describe())
        if dropped and time.monotonic() >= self._drops_logged + RETRY_EVERY:  # one line at most every few seconds
            self._drops_logged = time.monotonic()
            log.error(
                "%d call record(s) dropped so far, the oldest: at most %d wait in memory", self._dropped, MAX_WAITING
            )
        self._report(self._trouble)

    def _recovered(self, written: int) -> None:
        before = self._trouble
        if before is None:
            return
        self._trouble = None
        lost = f"; {before.dropped} record(s) were dropped" if before.dropped else ""
        log.warning("the call history is written again: %d waiting record(s) written%s", written, lost)
        self._dropped = 0
        self._report(None)

    def _report(self, trouble: Trouble | None) -> None:
        """Write (or remove) the status file `aai-gateway history` reads; beside the database if it can."""
        for file in self.status_files:
            try:
                if trouble is None:
                    file.unlink(missing_ok=True)
                    continue
                file.write_text(json.dumps(asdict(trouble)))
                return
            except OSError:
                continue

    def _count_now(self, conn: sqlite3.Connection) -> None:
        """Move the journal into the calls table and bring the hourly counts `stats` reads up to date (a few ms
        for CHECKPOINT_EVERY calls)."""
        self._uncounted = 0
        try:
            with folding(conn, self.path):
                stats.count_new(conn)
        except sqlite3.Error as exc:
            log.warning("could not update the hourly call counts in %s: %s", self.path, exc)

    def _checkpoint_now(self, conn: sqlite3.Connection) -> None:
        """Copy the log into the database so that the next commit starts it over, cut back to WAL_LIMIT.

        RESTART, not PASSIVE: a passive checkpoint under a steady stream of commits never catches up
        with the log, which then grows without end (hundreds of MB an hour, and its index in memory
        with it). The loop writes the journal, not the database; other gateways writing the same file
        are waited for.
        """
        self._count_now(conn)
        try:
            conn.execute("PRAGMA wal_checkpoint(RESTART)")
        except sqlite3.Error as exc:
            log.warning("could not checkpoint %s: %s", self.path, exc)
        self._signature = _signature(self.path)

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        seen = _signature(self.path)
        if seen is None or (self._signature is not None and seen[:2] != self._signature[:2]):
            # The log of a database deleted or replaced would be replayed into the file now there.
            for suffix in ("-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        if seen is None:
            if self._signature is not None:
                log.warning("%s was deleted: a new history starts", self.path)
            # The history holds what agents did with the user's apps: readable by the user alone.
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                log.warning("%s: SQLite refused WAL mode (%s); history writes may wait for readers", self.path, mode)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT}")
            migrate(conn, self.path)
        except BaseException:
            conn.close()
            raise
        self._signature = _signature(self.path)
        self._generation += 1
        return conn

    def _purge(self, conn: sqlite3.Connection) -> int:
        cutoff = iso(now() - timedelta(days=self.retention_days))
        with folding(conn, self.path):
            deleted = stats.delete_before(conn, cutoff)
        self._uncounted = 0
        if deleted:
            log.info("deleted %d call record(s) older than %g days from the history", deleted, self.retention_days)
        return deleted

    def _purge_quietly(self, conn: sqlite3.Connection) -> None:
        self._next_purge = time.monotonic() + PURGE_EVERY
        try:
            self._purge(conn)
        except sqlite3.Error as exc:
            log.warning("could not delete old call records from %s: %s", self.path, exc)


def _insert(conn: sqlite3.Connection, records: list[Record]) -> None:
    """The records in the calls table in one transaction, taking the write lock at once; rolled back on any
    failure."""
    with transaction(conn):
        conn.executemany(INSERT, [stored_row(record) for record in records])


def _signature(path: Path | str) -> Signature | None:
    """What tells whether the file is the one last written: device, inode, size, modification time."""
    try:
        st = os.stat(path)  # noqa: PTH116 - once per commit: without pathlib's overhead
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _close_quietly(conn: sqlite3.Connection) -> None:
    with suppress(sqlite3.Error):
        conn.close()


def _settle(done: Future[Any], error: BaseException | None = None, value: Any = None) -> None:
    """Finish a future unless its waiter gave up (a cancelled call): the record is written either way."""
    try:
        if error is None:
            done.set_result(value)
        else:
            done.set_exception(error)
    except InvalidStateError:
        pass

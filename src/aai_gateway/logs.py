"""Logging: a rotating file under the AAI home plus stderr. Never stdout, which may carry the protocol.

Every line is cut of the secrets the gateway resolved for others (`secret_forms.remember`): a server
given a key may print it on stderr, or answer with it, and a line quoting that must not keep it. The
libraries' own warnings (the MCP SDK's, which quote what a server answered) go the same way.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sys
import time
from functools import partial
from io import TextIOWrapper
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any, TextIO

from aai_gateway.secret_forms import cut, remembered

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_FILE = "gateway.log"


def lean() -> None:
    """Leave out of every log record what FORMAT never shows: the caller's file and line (a walk up the
    stack), the thread's name and the process's id and name. The logging HOWTO's own advice, for a
    process that logs a line per call."""
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def configure(level: str, log_dir: Path | None, *, stderr_level: str | None = None) -> Path | None:
    """Send the gateway's logs to stderr and to `log_dir/gateway.log`; return the file used, if any.

    `stderr_level` quiets the terminal of a one-shot command while its file keeps `level`.
    """
    root = logging.getLogger("aai_gateway")
    levels = [logging.getLevelName(level.upper()), logging.getLevelName((stderr_level or level).upper())]
    root.setLevel(min(levels))
    root.propagate = False
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    formatter = OnceFormatter(FORMAT)
    stderr = StderrHandler(sys.stderr)
    stderr.setLevel(levels[1])
    stderr.setFormatter(formatter)
    root.addHandler(stderr)
    _libraries(root.handlers)
    if log_dir is None:
        return None
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        file_handler = SizedRotatingFileHandler(log_dir / LOG_FILE, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
    except OSError as exc:
        root.warning("cannot write the log file in %s (%s); logging to stderr only", log_dir, exc)
        return None
    file_handler.setLevel(levels[0])
    file_handler.setFormatter(formatter)
    root.addHandler(file_handler)
    _libraries(root.handlers)
    return log_dir / LOG_FILE


_LIBRARIES: list[logging.Handler] = []
"""The handlers given to the root logger, for the warnings of libraries (which Python's last resort would
print on stderr as they are)."""


def reset() -> None:
    """Take the gateway's handlers off its logger and Python's root logger, and close them (for tests, and
    anything else that configures logging again): a closed file handler left on a logger would open its
    file again at the next record and never close it."""
    root = logging.getLogger("aai_gateway")
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    _libraries([])
    root.propagate = True
    root.setLevel(logging.NOTSET)


def _libraries(handlers: list[logging.Handler]) -> None:
    python = logging.getLogger()
    for handler in _LIBRARIES:
        python.removeHandler(handler)
    _LIBRARIES[:] = handlers
    for handler in _LIBRARIES:
        python.addHandler(handler)


def after_turn(logger: logging.Logger, message: str, *args: Any) -> None:
    """Log `message % args` at INFO once the current turn of the event loop is over, in one write to each
    of the gateway's sinks with the lines of the other calls that ended in that turn, instead of a log
    record each: a call's line is the largest part of what the gateway does after a call's answer (on
    a 2-core machine, 16 calls in flight over stdio, 9-13 % more calls a second without the records).
    The lines read as any other (`FORMAT`, the secrets cut out); where logging is not as `configure`
    left it (a test's, a library's handlers), each is a record as any other."""
    if not logger.isEnabledFor(logging.INFO):
        return
    loop = asyncio.get_running_loop()
    if logger.handlers or logger.filters or not _LIBRARIES or _GATEWAY.handlers != _LIBRARIES:
        loop.call_soon(partial(logger.info, message, *args))
        return
    if not _WAITING or _WRITER[0] is not loop:  # the first line of the turn (or of a loop after a closed one)
        _WRITER[0] = loop
        loop.call_soon(_write_waiting)
    _WAITING.append((time.time(), logger.name, message, args))


_GATEWAY = logging.getLogger("aai_gateway")
_WAITING: list[tuple[float, str, str, tuple[Any, ...]]] = []
"""The lines `after_turn` writes at the end of this turn: when, the logger's name, the message, its arguments."""
_WRITER: list[asyncio.AbstractEventLoop | None] = [None]
"""The loop that will write them."""


def _write_waiting() -> None:
    if not _WAITING:
        return
    waiting = _WAITING[:]
    _WAITING.clear()
    sinks = [
        h for h in _LIBRARIES if isinstance(h, StderrHandler | SizedRotatingFileHandler) and h.level <= logging.INFO
    ]
    if not sinks:
        return
    formatter = sinks[0].formatter
    stamp = formatter.stamp if isinstance(formatter, OnceFormatter) else OnceFormatter(FORMAT).stamp
    known = remembered()
    lines = []
    for created, name, message, args in waiting:
        line = f"{stamp(created)} INFO {name}: {message % args if args else message}"
        lines.append(cut(line, known) + "\n")
    text = "".join(lines)
    for sink in sinks:
        sink.acquire()
        try:
            sink.write_text(text)
        finally:
            sink.release()


class OnceFormatter(logging.Formatter):
    """Formats each record once, however many handlers (and rollover checks) ask for its text, with the
    secrets `remember`ed cut out of it.

    A call's log line goes to stderr and to the file, and the file handler formats it a second time
    to decide whether to roll over: three formats, with a timestamp each, on every call otherwise.
    """

    def format(self, record: logging.LogRecord) -> str:
        cached = record.__dict__.get("_aai_text")
        if cached is None or cached[0] is not self:
            cached = (self, cut(super().format(record), remembered()))
            record.__dict__["_aai_text"] = cached
        text: str = cached[1]
        return text

    _second: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - the stdlib's name
        """The stdlib's timestamp, with the date and time of the current second formatted once per second."""
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        return self.stamp(record.created, record.msecs)

    def stamp(self, created: float, msecs: float | None = None) -> str:
        """The timestamp of a moment (`time.time()`), as `formatTime` writes it."""
        second = int(created)
        if self._second[0] != second:
            self._second = (second, time.strftime(self.default_time_format, self.converter(created)))
        if msecs is None:  # as LogRecord works it out
            msecs = (created - second) * 1000
        return f"{self._second[1]},{int(msecs):03d}"  # the stdlib's default_msec_format


class StderrHandler(logging.StreamHandler[TextIO]):
    """stderr; also takes whole lines written at once (`after_turn`), under its lock."""

    def write_text(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()  # under the lock already: Handler.flush would take it again
        except RecursionError:
            raise
        except Exception:
            self.handleError(logging.makeLogRecord({"msg": text}))


class SizedRotatingFileHandler(RotatingFileHandler):
    """Rolls over on the size it has written, instead of two stats, a seek and a tell per record.

    The count starts from the file's size when it is opened, so a restart goes on where it left off.
    """

    _written = 0
    _failing: str | None = None
    """Why the last record could not be written (a full disk, a folder made read-only), once said."""
    _erred = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record) + self.terminator
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)
            return
        self.write_text(text, record)

    def write_text(self, text: str, record: logging.LogRecord | None = None) -> None:
        """Whole lines into the file, after a rollover when they take it to maxBytes; under the lock."""
        self._erred = False
        try:
            if self.stream is None:
                self.stream = self._open()
            if self.maxBytes > 0:
                self._written += len(text)
                if self._written >= self.maxBytes:
                    self.doRollover()
            self.stream.write(text)
            self.stream.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record if record is not None else logging.makeLogRecord({"msg": text}))
        if self._failing is not None and not self._erred:
            self._failing = None
            sys.stderr.write(f"aai-gateway: writing the log file {self.baseFilename} again\n")

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - the stdlib's name
        """Say once on stderr why the file cannot be written, instead of a traceback for every record."""
        self._erred = True
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            super().handleError(record)
            return
        reason = "disk full" if error.errno == errno.ENOSPC else (error.strerror or str(error))
        if reason != self._failing:
            self._failing = reason
            sys.stderr.write(
                f"aai-gateway: cannot write the log file {self.baseFilename} ({reason}); "
                "its lines go to stderr only until it can\n"
            )

    def _open(self) -> TextIOWrapper:
        stream = super()._open()
        try:
            self._written = os.fstat(stream.fileno()).st_size
        except OSError:
            self._written = 0
        return stream

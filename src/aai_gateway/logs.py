"""Logging: a rotating file under the AAI home plus stderr. Never stdout, which may carry the protocol.

Every line is cut of the secrets the gateway resolved for others (`secret_forms.remember`): a server
given a key may print it on stderr, or answer with it, and a line quoting that must not keep it. The
libraries' own warnings (the MCP SDK's, which quote what a server answered) go the same way.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import time
from io import TextIOWrapper
from logging.handlers import RotatingFileHandler
from pathlib import Path

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
    stderr = logging.StreamHandler(sys.stderr)
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
        second = int(record.created)
        if self._second[0] != second:
            self._second = (second, time.strftime(self.default_time_format, self.converter(record.created)))
        return f"{self._second[1]},{int(record.msecs):03d}"  # the stdlib's default_msec_format


class SizedRotatingFileHandler(RotatingFileHandler):
    """Rolls over on the size it has written, instead of two stats, a seek and a tell per record.

    The count starts from the file's size when it is opened, so a restart goes on where it left off.
    """

    _written = 0
    _failing: str | None = None
    """Why the last record could not be written (a full disk, a folder made read-only), once said."""
    _erred = False

    def emit(self, record: logging.LogRecord) -> None:
        self._erred = False
        super().emit(record)
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

    def shouldRollover(self, record: logging.LogRecord) -> bool:  # noqa: N802 - the stdlib's name
        if self.maxBytes <= 0:
            return False
        if self.stream is None:
            self.stream = self._open()
        self._written += len(self.format(record)) + 1
        return self._written >= self.maxBytes

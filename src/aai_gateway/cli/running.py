"""The one long-lived gateway of an AAI home: `serve`'s lock file, which also says where it listens.

`<AAI home>/serve.lock` holds `{"pid", "url", "ui"}` as JSON. Whether a `serve` runs is not read from
the pid alone (a pid can be reused) but from an OS lock on the file, which the system drops when its
holder ends however it ended: a file left by a killed `serve` is stale, and the next one takes it over.
The file is never deleted, only emptied on a clean exit: deleting it would let two starts lock two files.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

LOCK_FILE = "serve.lock"
_WINDOWS_BYTE = 1 << 30
"""Windows locks byte ranges and refuses reads of a locked one: the lock is on a byte far past the text."""


@dataclass(frozen=True, slots=True)
class Running:
    """What the lock file of a running `serve` says; `url` is None while it is still starting."""

    pid: int | None
    url: str | None = None
    ui: str | None = None


class AlreadyRunning(Exception):
    def __init__(self, path: Path, running: Running) -> None:
        pid = f"pid {running.pid}" if running.pid else "a process"
        at = f" at {running.url}" if running.url else ""
        super().__init__(f"a gateway (aai-gateway serve, {pid}) already serves this AAI home{at}; lock file {path}")
        self.running = running


def _lock(fd: int, *, shared: bool = False) -> bool:
    """Take the lock on `fd` without waiting; False when another process holds it."""
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, _WINDOWS_BYTE, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fd: int) -> None:
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, _WINDOWS_BYTE, os.SEEK_SET)
        with contextlib.suppress(OSError):
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)


def _read(fd: int) -> Running:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 64 * 1024)
    try:
        data = json.loads(text)
    except ValueError:
        return Running(None)
    if not isinstance(data, dict):
        return Running(None)
    pid, url, ui = data.get("pid"), data.get("url"), data.get("ui")
    return Running(
        pid if isinstance(pid, int) else None,
        url if isinstance(url, str) else None,
        ui if isinstance(ui, str) else None,
    )


class ServeLock:
    """The lock of the running `serve`, held from `acquire` until `release` or the process's end."""

    def __init__(self, path: Path, fd: int, took_over: int | None) -> None:
        self.path = path
        self._fd = fd
        self.took_over = took_over
        """The pid a stale lock file named, which is no longer running."""
        self._write(Running(os.getpid()))

    @classmethod
    def acquire(cls, aai_home: Path, attempts: int = 5) -> ServeLock:
        """The lock, or AlreadyRunning naming the serve that holds it. A few attempts, so that a `status`
        reading the file at that moment does not turn a start away."""
        path = aai_home / LOCK_FILE
        aai_home.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            for attempt in range(attempts):
                if _lock(fd):
                    before = _read(fd).pid
                    return cls(path, fd, before if before not in (None, os.getpid()) else None)
                if attempt < attempts - 1:
                    time.sleep(0.05)
            raise AlreadyRunning(path, _read(fd))
        except BaseException:
            os.close(fd)
            raise

    def announce(self, url: str, ui: str | None) -> None:
        """Write where this gateway listens, for `serve --status` and `service status`."""
        self._write(Running(os.getpid(), url, ui))

    def _write(self, running: Running) -> None:
        text = json.dumps({"pid": running.pid, "url": running.url, "ui": running.ui}) + "\n"
        os.lseek(self._fd, 0, os.SEEK_SET)
        os.ftruncate(self._fd, 0)
        os.write(self._fd, text.encode())

    def release(self) -> None:
        """Empty the file (nothing runs any more) and drop the lock."""
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        _unlock(self._fd)
        os.close(self._fd)


def running(aai_home: Path) -> Running | None:
    """The `serve` running on `aai_home`, or None when none holds its lock."""
    try:
        fd = os.open(aai_home / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return None
    try:
        if _lock(fd, shared=True):
            _unlock(fd)
            return None
        return _read(fd)
    finally:
        os.close(fd)

"""Linux's inotify, asked only for what can change the apps, read on the event loop.

watchfiles (which the other systems use) asks for every change, writes to open files included, and
cannot be told otherwise. The history database, its write-ahead log and the gateway's log sit in the
AAI home, so every call woke its thread a dozen times (~60-80 us of CPU a call on the other core,
measured with the gateway's /proc CPU times), and its 50 ms step woke an idle gateway 20 times a
second. Here a folder is watched for files created, deleted, moved, or closed after writing: a file
kept open and written, like a database or a log, says nothing until it is closed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = 0o2000000

MASK = IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
ADDED = IN_CREATE | IN_MOVED_TO
_HEADER = struct.Struct("iIII")
READ_SIZE = 64 * 1024


@dataclass(frozen=True, slots=True)
class Event:
    wd: int
    mask: int
    name: str


class Inotify:
    """One inotify instance: folders added by watch descriptor (a folder deleted drops its own), events read
    without waiting."""

    def __init__(self) -> None:
        if not sys.platform.startswith("linux"):
            raise OSError(errno.ENOSYS, "inotify is Linux's")
        libc = ctypes.CDLL(None, use_errno=True)  # the C library is loaded already: no search for it
        self._add_watch = libc.inotify_add_watch
        self._add_watch.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        self.fd: int = fd

    def add(self, folder: Path) -> int:
        """Watch `folder` (not below it); its watch descriptor, or OSError."""
        wd: int = self._add_watch(self.fd, os.fsencode(folder), MASK | IN_ONLYDIR)
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(folder))
        return wd

    def read(self) -> list[Event]:
        """The events waiting now (none when nothing is)."""
        events: list[Event] = []
        while True:
            try:
                data = os.read(self.fd, READ_SIZE)
            except BlockingIOError:
                return events
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _, size = _HEADER.unpack_from(data, offset)
                offset += _HEADER.size
                name = os.fsdecode(data[offset : offset + size].rstrip(b"\0"))
                offset += size
                events.append(Event(wd, mask, name))
            if len(data) < READ_SIZE // 2:
                return events

    def close(self) -> None:
        os.close(self.fd)

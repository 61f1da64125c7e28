"""Where the gateway's files live. With config.py, the only reader of the environment.

`~` follows `HOME` of the given environment (not the password database), so that tests and
sandboxes can move everything by setting `HOME`; `AAI_HOME` moves the `~/.aai` root alone.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

PLATFORMS = ("macos", "linux", "windows", "android", "ios")
"""Platforms a descriptor can bind; `web` is served everywhere besides the host's own."""


def home(env: Mapping[str, str]) -> Path:
    value = env.get("HOME") or env.get("USERPROFILE")
    return Path(value) if value else Path.home()


def expand(path: str, env: Mapping[str, str]) -> Path:
    """Expand a leading `~` against `HOME` of `env`; other paths are taken as written."""
    if path == "~" or path.startswith(("~/", "~\\")):
        return home(env) / path[2:]
    return Path(path)


def aai_home(env: Mapping[str, str]) -> Path:
    value = env.get("AAI_HOME")
    return expand(value, env) if value else home(env) / ".aai"


def config_file(env: Mapping[str, str]) -> Path:
    return aai_home(env) / "config.json"


def cache_dir(env: Mapping[str, str]) -> Path:
    """`$XDG_CACHE_HOME/aai-gateway`, else `~/.cache/aai-gateway` (web descriptors fetched by web:discover)."""
    base = env.get("XDG_CACHE_HOME")
    return (Path(base) if base else home(env) / ".cache") / "aai-gateway"


SESSION_BUS_FILE = "session-bus"
"""In the AAI home: the session bus scripts/quickstart started (see session_bus.py)."""


def session_bus_file(env: Mapping[str, str]) -> Path:
    return aai_home(env) / SESSION_BUS_FILE


def log_dir(env: Mapping[str, str]) -> Path:
    return aai_home(env) / "logs"


def host_platform() -> str:
    if sys.platform == "darwin":
        return "macos"
    if sys.platform.startswith("win"):
        return "windows"
    return "linux"


def environ() -> Mapping[str, str]:
    return os.environ


class NotRead(Exception):
    """A file refused before or while reading it; the message says why, in a few words."""


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def read_limited(path: Path, max_bytes: int) -> bytes:
    """The bytes of `path`, a regular file (or a link to one) of at most `max_bytes`; NotRead saying why
    not. A device, pipe or socket is refused before it is read, so that `/dev/zero` cannot fill memory
    and a FIFO cannot block: it is opened without blocking and checked again once open."""

    def check(info: os.stat_result) -> None:
        for test, kind in _KINDS:
            if test(info.st_mode):
                raise NotRead(f"is {kind}, not a regular file; not read")
        if not stat.S_ISREG(info.st_mode):
            raise NotRead("is not a regular file; not read")
        if info.st_size > max_bytes:
            raise NotRead(f"is {info.st_size} bytes, over the limit of {max_bytes}; not read")

    try:
        check(path.stat())
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
        handle = os.open(path, flags)
    except OSError as exc:
        raise NotRead(f"cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(handle, "rb") as stream:
        try:
            info = os.fstat(handle)
            check(info)  # the name may have been swapped for a pipe meanwhile
            data = stream.read(info.st_size + 1)  # not max_bytes + 1, which Python would set aside whole
            if len(data) > info.st_size:
                data += stream.read(max_bytes + 1 - len(data))
        except OSError as exc:
            raise NotRead(f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise NotRead(f"grew past the limit of {max_bytes} bytes while being read; not read")
    return data


MAX_BACKUPS = 1000
"""Numbered copies kept of one file before `keep_backup` gives up (each one a replacement asked for)."""


def keep_backup(path: Path, data: bytes | None = None) -> Path:
    """Keep a copy of `path` (whose bytes are `data`, if already read) beside it, under the first free
    name of `aai.json.bak`, `aai.json.1.bak`, `aai.json.2.bak`, …, and return where: an earlier
    backup is never replaced, and one holding the same bytes is used again. Raises OSError."""
    if data is None:
        data = path.read_bytes()
    for number in range(MAX_BACKUPS):
        backup = path.with_name(f"{path.name}.bak" if number == 0 else f"{path.name}.{number}.bak")
        with contextlib.suppress(OSError):
            if backup.stat().st_size == len(data) and backup.is_file() and backup.read_bytes() == data:
                return backup
        if backup.exists() or backup.is_symlink():
            continue
        temp = _synced_temp(backup, data)
        try:
            os.link(temp, backup)  # fails, instead of replacing, when another backup took the name meanwhile
        except FileExistsError:
            continue
        finally:
            with contextlib.suppress(OSError):
                temp.unlink()
        return backup
    raise OSError(f"{path.parent} already holds {MAX_BACKUPS} backups of {path.name}; remove some of them")


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write `path` whole or not at all: a temporary file in the same folder, synced, then renamed over it.
    Not `durable`: not synced (a cache, which a power cut may leave empty)."""
    temp = _synced_temp(path, data, durable=durable)
    try:
        temp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def _synced_temp(path: Path, data: bytes, *, durable: bool = True) -> Path:
    """`data` in a new temporary file beside `path`, on disk (synced if `durable`); removed again if writing fails."""
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            if durable:
                os.fsync(out.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            Path(temp).unlink()
        raise
    return Path(temp)

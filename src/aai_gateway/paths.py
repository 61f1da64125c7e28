"""Where the gateway's files live. With config.py, the only reader of the environment.

`~` follows `HOME` of the given environment (not the password database), so that tests and
sandboxes can move everything by setting `HOME`; `AAI_HOME` moves the `~/.aai` root alone.
"""

from __future__ import annotations

import contextlib
import os
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


def write_atomic(path: Path, data: bytes) -> None:
    """Write `path` whole or not at all: a temporary file in the same folder, synced, then renamed over it."""
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        Path(temp).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(temp).unlink()
        raise

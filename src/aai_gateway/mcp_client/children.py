"""Server processes the gateway started: none may outlive it.

Each stdio server runs in its own process group (its pid is the group's id), so a server's own
children go with it. Closing the session stops a group politely; this module is the last resort for
an exit that skips that (SIGTERM to the gateway, `sys.exit` from a thread): every group still alive
is killed at exit and on SIGTERM, before the gateway dies of the signal as it would have.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import threading
import time
from types import FrameType

log = logging.getLogger("aai_gateway.mcp_client")

_groups: set[int] = set()
_installed = False
GRACE = 1.0
"""Seconds a group has between SIGTERM and SIGKILL when the gateway exits."""


def adopt(pid: int) -> None:
    """Remember the process group led by `pid` until `release`."""
    _install()
    _groups.add(pid)


def release(pid: int) -> None:
    _groups.discard(pid)


def alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_all() -> None:
    """SIGTERM every group left, then SIGKILL what is still there after `GRACE`."""
    groups = list(_groups)
    if not groups:
        return
    for pgid in groups:
        kill_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and any(alive(g) for g in groups):
        time.sleep(0.02)
    for pgid in groups:
        if alive(pgid):
            kill_group(pgid, signal.SIGKILL)
    _groups.clear()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    kill_all()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _install() -> None:
    global _installed  # noqa: PLW0603 (one guard per process)
    if _installed:
        return
    _installed = True
    atexit.register(kill_all)
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)

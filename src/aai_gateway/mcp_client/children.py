"""Server processes the gateway started: none may outlive it.

Each stdio server runs in its own process group (its pid is the group's id), so a server's own
children go with it. Closing the session stops a group politely; this module is the last resort for
an exit that skips that (SIGTERM to the gateway, `sys.exit` from a thread): every group still alive
is killed at exit and on SIGTERM, before the gateway dies of the signal as it would have.

For an end that runs no code at all (SIGKILL, a crash), a keeper process is told of each group as it
comes and goes, on a pipe from the gateway; when the pipe closes (the gateway is gone, however it
ended) the keeper SIGTERMs the groups left, then SIGKILLs them after `GRACE`. One keeper serves every
server of a gateway, started with the first server: a Python without `site` (~15 ms of its own CPU,
~3 ms of the gateway's to spawn it), rather than a wrapper around each server that every start would
pay for. PR_SET_PDEATHSIG would reach only the server itself, not the processes it starts.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from types import FrameType

log = logging.getLogger("aai_gateway.mcp_client")

_groups: set[int] = set()
_installed = False
_keeper: subprocess.Popen[bytes] | None = None
GRACE = 1.0
"""Seconds a group has between SIGTERM and SIGKILL when the gateway exits."""

KEEPER = f"""
import os, signal, sys, time
groups = set()
for line in sys.stdin:
    (groups.add if line[0] == "+" else groups.discard)(int(line[1:]))
def left():
    found = set()
    for group in groups:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            continue
        except OSError:
            pass
        found.add(group)
    return found
for sig, grace in ((signal.SIGTERM, {GRACE}), (signal.SIGKILL, 0)):
    groups = left()
    for group in groups:
        try:
            os.killpg(group, sig)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while groups and time.monotonic() < deadline:
        time.sleep(0.02)
        groups = left()
"""
"""The keeper: reads `+PGID` and `-PGID` lines until its stdin ends, then stops the groups still there."""


def adopt(pid: int) -> None:
    """Remember the process group led by `pid` until `release`."""
    _install()
    _groups.add(pid)
    _tell(f"+{pid}\n")


def release(pid: int) -> None:
    if pid in _groups:
        _groups.discard(pid)
        _tell(f"-{pid}\n")


def _tell(line: str) -> None:
    """Pass `line` to the keeper; start one (told of every group) when there is none."""
    global _keeper  # noqa: PLW0603 (one keeper per process)
    if _keeper is None:
        _keeper = _start_keeper()
    elif not _write(_keeper, line):
        log.warning("the keeper of the MCP servers' processes is gone; starting another")
        _keeper.kill()
        _keeper.wait()
        _keeper = _start_keeper()


def _start_keeper() -> subprocess.Popen[bytes] | None:
    if os.name != "posix" or not sys.executable or not _groups:
        return None
    try:
        keeper = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", KEEPER],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            start_new_session=True,
            bufsize=0,
        )
    except OSError as exc:
        log.warning("no keeper for the MCP servers' processes (%s): a killed gateway leaves them running", exc)
        return None
    if not _write(keeper, "".join(f"+{group}\n" for group in _groups)):
        log.warning("the keeper of the MCP servers' processes ended at once; a killed gateway leaves them running")
    return keeper


def _write(keeper: subprocess.Popen[bytes], lines: str) -> bool:
    try:
        assert keeper.stdin is not None
        os.write(keeper.stdin.fileno(), lines.encode())
    except OSError:
        return False
    return True


def _dismiss_keeper() -> None:
    """At a clean exit: no group is left, so the keeper ends as soon as its stdin does."""
    global _keeper
    keeper, _keeper = _keeper, None
    if keeper is not None and keeper.stdin is not None:
        keeper.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            keeper.wait(GRACE)


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
        release(pgid)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    kill_all()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _install() -> None:
    global _installed  # noqa: PLW0603 (one guard per process)
    if _installed:
        return
    _installed = True
    atexit.register(_dismiss_keeper)
    atexit.register(kill_all)
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)

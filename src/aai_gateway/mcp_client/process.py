"""Starting a server's process, its pipes as byte streams, and noticing its exit.

The process is started by `subprocess`, not by the event loop: uvloop leaves an inheritable copy of each
pipe it makes (and every inheritable descriptor of the gateway) open in the server, where a process the
server starts keeps them, so that the server's output never ends when it exits. Here a server gets its
three pipes and nothing else, and its exit is noticed by its process (a pidfd where Linux has one), not
by the end of its output.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO

import anyio
import anyio.abc
from anyio.lowlevel import checkpoint

POLL = 0.1
"""Seconds between looks at a process without a pidfd (other systems than Linux)."""


class CannotStart(Exception):
    """The server's process could not be started; the message says why, in words for the user."""


def start(command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None) -> subprocess.Popen[bytes]:
    """The server started in a new session (its own process group), with pipes for stdin, stdout and stderr."""
    try:
        return subprocess.Popen(
            [command, *args],
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )
    except OSError as exc:
        raise CannotStart(_why(exc, command, cwd)) from exc


def _why(exc: OSError, command: str, cwd: str | None) -> str:
    if cwd is not None and exc.filename == cwd:  # subprocess names the folder when changing into it failed
        where = f"its folder {cwd} (execution.cwd)"
        if isinstance(exc, FileNotFoundError):
            return f"{where} does not exist"
        if isinstance(exc, NotADirectoryError):
            return f"{where} is not a folder"
        if isinstance(exc, PermissionError):
            return f"{where} cannot be entered (permission denied)"
        return f"{where} cannot be used: {exc.strerror or exc}"
    if isinstance(exc, FileNotFoundError):
        return f"the command was not found ({exc.filename or command})"
    if isinstance(exc, PermissionError):
        return f"the command cannot be run ({exc.filename or command}: permission denied)"
    return f"the command {command} cannot be run: {exc.strerror or exc}"


async def wait(process: subprocess.Popen[bytes]) -> int:
    """The process's exit status, once it has exited (whatever became of its pipes)."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
        pidfd = None
    try:
        while (code := process.poll()) is None:
            if pidfd is None:
                await anyio.sleep(POLL)
            else:
                await anyio.wait_readable(pidfd)
        return code
    finally:
        if pidfd is not None:
            os.close(pidfd)


class _Pipe:
    """One end of a pipe, switched to non-blocking: waits go through the event loop."""

    def __init__(self, pipe: IO[bytes] | None) -> None:
        assert pipe is not None
        self._pipe = pipe
        self._fd = pipe.fileno()
        os.set_blocking(self._fd, False)

    def _check_open(self) -> None:
        if self._pipe.closed:
            raise anyio.ClosedResourceError

    async def aclose(self) -> None:
        if not self._pipe.closed:
            anyio.notify_closing(self._fd)
            with contextlib.suppress(OSError):
                self._pipe.close()


class PipeReader(_Pipe, anyio.abc.ByteReceiveStream):
    """The reading end of a pipe as an anyio byte stream."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            self._check_open()
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            if not data:
                raise anyio.EndOfStream
            await checkpoint()  # a server that floods its output does not hold the event loop
            return data


class PipeWriter(_Pipe, anyio.abc.ByteSendStream):
    """The writing end of a pipe as an anyio byte stream."""

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            self._check_open()
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
            except BrokenPipeError:
                raise anyio.BrokenResourceError from None

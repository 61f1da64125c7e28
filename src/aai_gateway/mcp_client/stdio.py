"""A stdio server as the SDK's session wants it: two message streams, and the process behind them.

Unlike the SDK's `stdio_client` this keeps the process at hand (its pid for the status and the kill,
its exit for noticing a crash) and its stderr in the log, each line passed through `redact` (which cuts
the server's secrets out) before it is kept or logged. A line on stdout that is not a JSON-RPC message
is logged and skipped, so a server that prints stray text keeps its session.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from anyio.streams.text import TextReceiveStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from aai_gateway.mcp_client import children
from aai_gateway.text import printable

log = logging.getLogger("aai_gateway.mcp_client")

STOP_GRACE = 2.0
"""Seconds a server has to exit after its stdin closes, and again after SIGTERM, before SIGKILL."""
MAX_LINE = 64 * 1024 * 1024
MAX_NESTING = 100
"""Deepest objects and arrays kept of a message the SDK's parser refuses as nested too deeply; deeper ones
become null (a tool schema that deep is refused anyway)."""
MAX_STDERR_LINE = 64 * 1024
"""A longer line on stderr is taken in pieces of this size."""
SHOWN = 500
"""Characters of a line on stderr kept and logged."""


@dataclass
class Child:
    process: anyio.abc.Process
    read: MemoryObjectReceiveStream[SessionMessage | Exception]
    write: MemoryObjectSendStream[SessionMessage]
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=5))
    """The server's last lines on stderr, for a message saying why it ended."""
    exited: anyio.Event = field(default_factory=anyio.Event)
    """Set when the server's stdout ends: it exited, or closed the pipe it answers on (the same to us).
    (The process's own `wait` returns only once every pipe is closed, ours to its stdin too.)"""

    @property
    def pid(self) -> int:
        return self.process.pid


@asynccontextmanager
async def spawn(
    label: str,
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    *,
    redact: Callable[[str], str] = str,
) -> AsyncIterator[Child]:
    """Start the server in its own process group; on leaving, stop the whole group (by its pid)."""
    process = await anyio.open_process(
        [command, *args],
        env=get_default_environment() | dict(env),
        cwd=cwd,
        start_new_session=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    children.adopt(process.pid)
    read_writer, read = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write, write_reader = anyio.create_memory_object_stream[SessionMessage](16)
    child = Child(process, read, write)
    log.info("%s: started %s (pid %d)", label, command, process.pid)

    async def stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()

    def said(line: str) -> None:
        if line.strip():
            shown = printable(redact(line)[:SHOWN])  # cut before shortened: no piece of a secret is left
            child.stderr.append(shown)
            log.debug("%s: %s", label, shown)

    async def stderr() -> None:
        assert process.stderr is not None
        partial = ""  # a line split between two reads, whole before it is redacted
        async for chunk in TextReceiveStream(process.stderr, errors="replace"):
            *lines, partial = (partial + chunk).split("\n")
            if len(partial) > MAX_STDERR_LINE:
                lines.append(partial)
                partial = ""
            for line in lines:
                for piece in line.splitlines():
                    said(piece)
        said(partial)

    async def waiter() -> None:
        code = await process.wait()
        log.info("%s: pid %d exited with %s", label, process.pid, code)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_read_stdout, label, child, read_writer)
            group.start_soon(stdin)
            group.start_soon(stderr)
            group.start_soon(waiter)
            try:
                yield child
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(label, process, child.exited)
                group.cancel_scope.cancel()
    finally:
        children.release(process.pid)


async def _read_stdout(label: str, child: Child, writer: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    try:
        await _read_lines(label, child.process, writer)
    finally:
        child.exited.set()


async def _read_lines(
    label: str, process: anyio.abc.Process, writer: MemoryObjectSendStream[SessionMessage | Exception]
) -> None:
    assert process.stdout is not None
    buffer = ""
    async with writer:
        async for chunk in TextReceiveStream(process.stdout, errors="replace"):
            lines = (buffer + chunk).split("\n")
            buffer = lines.pop()
            if len(buffer) > MAX_LINE:
                log.warning("%s: a line on stdout grew past %d bytes; dropped", label, MAX_LINE)
                buffer = ""
            for line in lines:
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except (ValidationError, ValueError):
                    salvaged = _salvaged(line)
                    if salvaged is None:
                        log.warning("%s: not a JSON-RPC message on stdout, skipped: %s", label, printable(line[:200]))
                        continue
                    log.warning("%s: an answer on stdout could not be read as it came: %s", label, _gist(salvaged))
                    message = salvaged
                try:
                    await writer.send(SessionMessage(message))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return


def _salvaged(line: str) -> types.JSONRPCMessage | None:
    """A line the SDK's parser refused, read by Python's with its deepest parts cut; an answer (it has an id and a
    result or error) that still is not one becomes an error answer to its request. None: nothing to salvage."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_python(
            _cut(data, MAX_NESTING), by_name=False
        )
    except ValidationError as exc:
        request_id = data.get("id")
        answer = isinstance(request_id, int | str) and not isinstance(request_id, bool)
        if not answer or not data.keys() & {"result", "error"}:
            return None
        why = f"the server's answer is not a JSON-RPC answer ({exc.error_count()} problems)"
        return types.JSONRPCError(
            jsonrpc="2.0", id=request_id, error=types.ErrorData(code=types.INTERNAL_ERROR, message=why)
        )
    return message


def _cut(value: object, depth: int) -> object:
    if isinstance(value, dict):
        return None if depth <= 0 else {k: _cut(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list):
        return None if depth <= 0 else [_cut(v, depth - 1) for v in value]
    return value


def _gist(message: types.JSONRPCMessage) -> str:
    if isinstance(message, types.JSONRPCError):
        return message.error.message
    return f"objects nested deeper than {MAX_NESTING} levels were cut"


async def _stop(label: str, process: anyio.abc.Process, exited: anyio.Event) -> None:
    """Close stdin; then SIGTERM the group, then SIGKILL it, each only while a member is left."""
    if process.stdin is not None:
        await process.stdin.aclose()
    with anyio.move_on_after(STOP_GRACE):
        await exited.wait()
        await _gone(process)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _group_left(process):
            return
        children.kill_group(process.pid, sig)
        with anyio.move_on_after(STOP_GRACE):
            await _gone(process)
    if _group_left(process):
        log.warning("%s: process group %d is still alive after SIGKILL", label, process.pid)


def _group_left(process: anyio.abc.Process) -> bool:
    """Whether the server or a process it started is alive (an exited server not yet reaped counts)."""
    return process.returncode is None or children.alive(process.pid)


async def _gone(process: anyio.abc.Process) -> None:
    while _group_left(process):
        await anyio.sleep(0.02)

"""MCP messages as JSON lines over stdin and stdout, read and written by worker threads.

The transport for where the event loop cannot watch stdin and stdout (a regular file, the null device,
Windows) and for `fastStdio: false`. Like the pipes, every line is screened by the wire and becomes the
SDK's message here, so a line the SDK's own parser would refuse (half a surrogate pair in a call's
arguments) is served like any other; and, as there, no new request is read while more than
BACKLOG_LIMIT bytes of answers wait for a client that does not read them, or more than HELD_LIMIT bytes
of requests are unanswered.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from aai_gateway.mcp.pacing import BACKLOG_LIMIT, HELD_LIMIT, Closing, Reading
from aai_gateway.mcp.wire.jsonrpc import Refusal, cancelled_id, encoded, request_key
from aai_gateway.mcp.wire.screen import screened

log = logging.getLogger(__name__)


class ThreadWriter(Closing):
    """The server's write stream: each message serialised and written as one line, in the order sent.

    It also keeps the count the reader paces itself by: bytes of answers waiting to be written, and bytes
    of requests read and not answered (released by their answer, or by the client cancelling them)."""

    def __init__(self, wire: BinaryIO) -> None:
        self._wire = wire
        self._lock = anyio.Lock()
        self._waiting = 0
        self._held: dict[tuple[type, int | str], int] = {}
        self._held_bytes = 0
        self._open = anyio.Event()
        self._open.set()

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message
        if self._held and isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self.release(message.id)
        await self.send_line(message.model_dump_json(by_alias=True, exclude_unset=True).encode())

    async def send_line(self, line: bytes) -> None:
        """Write one serialised message (without its newline)."""
        self._waiting += len(line)
        self._pace()
        try:
            async with self._lock:
                await anyio.to_thread.run_sync(self._write, line + b"\n")
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        finally:
            self._waiting -= len(line)
            self._pace()

    def _write(self, data: bytes) -> None:
        self._wire.write(data)
        self._wire.flush()

    def hold(self, request_id: int | str, size: int) -> None:
        """A request of `size` bytes read; held until answered or cancelled."""
        key = request_key(request_id)
        self._held_bytes += size - self._held.get(key, 0)
        self._held[key] = size
        self._pace()

    def release(self, request_id: int | str) -> None:
        self._held_bytes -= self._held.pop(request_key(request_id), 0)
        self._pace()

    def _pace(self) -> None:
        if self._waiting > BACKLOG_LIMIT or self._held_bytes > HELD_LIMIT:
            if self._open.is_set():
                self._open = anyio.Event()
        else:
            self._open.set()

    async def ready(self) -> None:
        """Wait until the next request may be read."""
        await self._open.wait()


class ThreadReader(Reading[SessionMessage | Exception]):
    """The server's read stream: one message per line, screened by the wire; a malformed line is answered
    here, in order, and never reaches the SDK. Blank lines are skipped."""

    def __init__(self, wire: BinaryIO, writer: ThreadWriter) -> None:
        self._wire = wire
        self._writer = writer

    async def receive(self) -> SessionMessage | Exception:
        while True:
            await self._writer.ready()
            line = await anyio.to_thread.run_sync(self._wire.readline)
            if not line:
                raise anyio.EndOfStream
            if line.isspace():
                continue
            message = screened(line)
            if not isinstance(message, Refusal):
                self._count(message, len(line))
                return message
            if message.answer is not None:
                await self._writer.send_line(encoded(message.answer))

    def _count(self, item: SessionMessage, size: int) -> None:
        message = item.message
        if isinstance(message, JSONRPCRequest):
            self._writer.hold(message.id, size)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            request_id = cancelled_id(message.model_dump(by_alias=True))
            if request_id is not None:
                self._writer.release(request_id)


@contextmanager
def threaded_stdio() -> Iterator[tuple[ThreadReader, ThreadWriter]]:
    """Streams over stdin and stdout on descriptors of their own, while fd 0 reads the null device and
    fd 1 writes to stderr (as the SDK's transport does), so that no child process reads the client's
    requests or writes into its answers; both are restored on exit."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    source = os.fdopen(wire_in, "rb")
    sink = os.fdopen(wire_out, "wb")
    writer = ThreadWriter(sink)
    try:
        yield ThreadReader(source, writer), writer
    finally:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        source.close()
        sink.close()

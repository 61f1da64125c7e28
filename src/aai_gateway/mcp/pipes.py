"""MCP messages as JSON lines over the process's stdin and stdout, read and written on the event loop.

The SDK's own stdio transport reads and writes through worker threads and hands every message
through two memory streams; each hop costs a thread switch or a task switch per message. Here the
server's read stream parses a line straight off an asyncio pipe and its write stream writes the
serialised answer straight into one: about a quarter of a millisecond less per call.

As with the SDK's transport, fd 0 and fd 1 are pointed at the null device and at stderr while
serving, so a child process or a stray print can neither read the client's requests nor corrupt
the wire; both are restored on exit.

Only the SDK's own streams over these (`pipe_streams.py`) import the SDK, when the SDK is first wanted:
a stdio session is served without it until then (mcp/stdio.py).
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import stat
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, BinaryIO, cast

import anyio

from aai_gateway.mcp.pacing import BACKLOG_LIMIT, HELD_LIMIT, Closing

if TYPE_CHECKING:
    from aai_gateway.mcp.pipe_streams import PipeReader, PipeSender

log = logging.getLogger(__name__)

Shortcut = Callable[[bytes], bool]
"""Takes a whole line (with its newline) to answer itself, or returns False to pass it on."""

LINE_LIMIT = 1 << 30
"""Longest request line accepted; the SDK's transport sets none, and arguments may carry megabytes."""


class PipeWriter(Closing):
    """Stdout: each serialised message written as one line, in the order sent."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self.stdin: asyncio.ReadTransport | None = None
        """Paused while more than BACKLOG_LIMIT bytes of answers wait, so that a client that stops
        reading stops the gateway taking (and answering into memory) further requests."""
        self._held = 0
        self._backlog = 0
        """Bytes of answers the transport held when last looked at."""
        self._paused = False

    async def send_line(self, line: bytes) -> None:
        """Write one serialised message (without its newline)."""
        writer = self._writer
        if writer.is_closing():
            raise anyio.ClosedResourceError
        writer.write(line + b"\n")
        self._backlog = writer.transport.get_write_buffer_size()
        self._throttle()
        if not self._backlog:  # written whole: the transport is not paused, there is nothing to wait for
            return
        try:
            await writer.drain()
        except ConnectionError as exc:
            raise anyio.BrokenResourceError from exc
        self._backlog = writer.transport.get_write_buffer_size()
        self._throttle()

    def hold(self, size: int) -> None:
        """Count `size` bytes of requests taken (negative: answered) towards pausing stdin."""
        self._held += size
        self._throttle()

    def _throttle(self) -> None:
        if self.stdin is None:
            return
        over = self._held > HELD_LIMIT or self._backlog > BACKLOG_LIMIT
        if over != self._paused:  # only a change of state reaches the transport: this runs for every message
            self._paused = over
            if over:
                self.stdin.pause_reading()
            else:
                self.stdin.resume_reading()

    async def aclose(self) -> None:
        with suppress(ConnectionError):
            await self._writer.drain()


class Offering(asyncio.StreamReaderProtocol):
    """Stdin's protocol: each whole line is offered to `shortcut` the moment it arrives, and the lines it
    does not take reach the stream reader in order. Taking a call here, rather than when the SDK's
    read loop gets to it, spares a turn of the event loop on every call."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__(reader)
        self.stream = reader
        self.shortcut: Shortcut | None = None
        """A line it returns True for is its to answer and is not passed on."""
        self._ended: Callable[[bool], None] | None = None
        self._end: bool | None = None
        """Once stdin ended, whether an unfinished last line was passed on then."""
        self._partial = bytearray()
        """The start of a line still arriving; grown in place, since a line of megabytes comes in many pieces."""

    def data_received(self, data: bytes) -> None:
        end = data.rfind(b"\n") + 1
        if not end:
            self._partial += data
            if len(self._partial) > LINE_LIMIT:  # the reader refuses it
                super().data_received(bytes(self._partial))
                self._partial.clear()
            return
        whole = bytes(self._partial + data[:end]) if self._partial else data[:end]
        self._partial = bytearray(data[end:])
        take = self.shortcut
        if take is not None:
            lines = whole.split(b"\n")[:-1]
            whole = b"".join(line + b"\n" for line in lines if not take(line + b"\n"))
        if whole:
            super().data_received(whole)

    def when_ended(self, told: Callable[[bool], None]) -> None:
        """Tell `told` when stdin ends (or fails), or now if it has, and whether an unfinished last line was
        passed on then."""
        self._ended = told
        if self._end is not None:
            told(self._end)

    def _finish(self, rest: bool) -> None:
        if self._end is None:
            self._end = rest
            if self._ended is not None:
                self._ended(rest)

    def eof_received(self) -> bool | None:
        rest = bool(self._partial)
        if rest:
            super().data_received(bytes(self._partial))
            self._partial.clear()
        self._finish(rest)
        return super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish(False)
        super().connection_lost(exc)


class Pipes:
    """The server's streams over stdin and stdout, and how to give stdin and stdout back."""

    def __init__(
        self,
        offering: Offering,
        writer: PipeWriter,
        transports: tuple[asyncio.BaseTransport, asyncio.BaseTransport],
        wires: tuple[BinaryIO, BinaryIO],
        blocking: tuple[bool, bool],
    ) -> None:
        self.offering = offering
        self.writer = writer
        self.writer.stdin = cast("asyncio.ReadTransport", transports[0])
        self._streams: tuple[PipeReader, PipeSender] | None = None
        self._transports = transports
        self._wires = wires
        self._blocking = blocking

    def sdk_streams(self, answered: set[int | str]) -> tuple[PipeReader, PipeSender]:
        """The SDK's read stream (the lines `offering` did not take, in order) and write stream, which drops
        the SDK's answers to the requests `answered` before it took over."""
        if self._streams is None:
            from aai_gateway.mcp.pipe_streams import PipeReader, PipeSender  # noqa: PLC0415 (imports the SDK)

            self._streams = PipeReader(self.offering.stream, self.writer), PipeSender(self.writer, answered)
        return self._streams

    def close(self) -> None:
        for fd, wire in enumerate(self._wires):
            if not wire.closed:  # the read transport closes its end at end of file
                with suppress(OSError):
                    os.dup2(wire.fileno(), fd)
        _set_blocking(self._blocking)
        for transport in self._transports:
            transport.close()


async def open_pipes(
    unread: bytes = b"", taking: Callable[[PipeWriter], Shortcut] | None = None, offered: bytes = b""
) -> Pipes:
    """Streams over stdin and stdout; stdin then reads the null device and stdout writes to stderr.

    `unread` is what the stream reader holds first; with `taking`, its shortcut for the writer is the
    offering's before anything is read, and is offered `offered` (read from stdin before) first.

    Raises ValueError, with stdin and stdout untouched, where the event loop cannot watch them (a
    regular file, the null device): the caller then falls back to the SDK's transport.
    """
    for fd in (0, 1):
        if not _watchable(fd):
            raise ValueError(f"fd {fd} is neither a pipe, a socket nor a terminal")
    loop = asyncio.get_running_loop()
    blocking = os.get_blocking(0), os.get_blocking(1)
    wire_in = os.fdopen(fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3), "rb", buffering=0)
    wire_out = os.fdopen(fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3), "wb", buffering=0)
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    reader.feed_data(unread)  # read from stdin before, and still to be served
    transports: list[asyncio.BaseTransport] = []
    try:
        write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, wire_out)
        transports.append(write_transport)
        writer = PipeWriter(asyncio.StreamWriter(write_transport, protocol, None, loop))
        offering = Offering(reader)
        if taking is not None:
            offering.shortcut = taking(writer)
            offering.data_received(offered)
        read_transport, _ = await loop.connect_read_pipe(lambda: offering, wire_in)
        transports.insert(0, read_transport)
    except (ValueError, OSError) as exc:
        for transport in transports:
            transport.close()
        wire_in.close()
        wire_out.close()
        _set_blocking(blocking)
        raise ValueError(f"stdin or stdout cannot be watched by the event loop: {exc}") from exc
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    os.dup2(2, 1)
    return Pipes(offering, writer, (read_transport, write_transport), (wire_in, wire_out), blocking)


def _set_blocking(modes: tuple[bool, bool]) -> None:
    """Put stdin and stdout back in the mode they had (the event loop made them non-blocking)."""
    for fd, mode in enumerate(modes):
        with suppress(OSError):
            os.set_blocking(fd, mode)


def _watchable(fd: int) -> bool:
    """Whether the event loop can watch `fd`. Checked here, before any loop sees it: asyncio refuses a
    regular file with an error, but uvloop aborts the process."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))

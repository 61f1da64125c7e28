"""MCP over stdio: nothing but protocol messages reach stdout."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import BinaryIO, cast

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from aai_gateway.mcp import loop
from aai_gateway.mcp.reload import keep_fresh
from aai_gateway.mcp.sdk_private import ReadStream, WriteStream
from aai_gateway.mcp.server import GatewayServer
from aai_gateway.mcp.wire.early import Early
from aai_gateway.mcp.wire.jsonrpc import Message, Refusal, has_lone_surrogates, read, surrogate_refusal
from aai_gateway.mcp.wire.screen import refusal_message, sdk_message
from aai_gateway.service import Gateway

log = logging.getLogger(__name__)

Streams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]


class ScreenedStdin:
    """Stdin for the SDK's threaded transport: each line screened by the wire before the SDK parses it.

    A malformed line is answered through the SDK's own write stream (`answers`) and not passed on, so
    the SDK never sees a line it would leave unanswered or decode with replacement characters."""

    def __init__(self, source: BinaryIO, server: GatewayServer) -> None:
        self._source = source
        self._server = server
        self.answers: WriteStream[SessionMessage] | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while line := await anyio.to_thread.run_sync(self._source.readline):
            if line.isspace():
                continue
            message = read(line)
            if isinstance(message, Message) and has_lone_surrogates(line, message):
                await self._unparseable(message)  # the SDK's parser refuses it: answered here
                continue
            checked = sdk_message(message) if not isinstance(message, Refusal) else message
            if not isinstance(checked, Refusal):
                yield line.decode()
                continue
            answer = refusal_message(checked)
            if answer is not None and self.answers is not None:
                await self.answers.send(answer)

    async def _unparseable(self, message: Message) -> None:
        """A call holding half a surrogate pair in its arguments, which the SDK cannot parse: answered by
        the call's own path (INVALID_PARAMS, recorded), as the fast path answers it."""
        from aai_gateway.mcp.wire.calls import EVERY, answered, ready_caller, takeable  # noqa: PLC0415 (rare)

        server = self._server
        caller = ready_caller(server.connection, "stdio")
        call = takeable(server, message.body, EVERY) if caller is not None else None
        if caller is None or call is None:
            answer = surrogate_refusal().answer
        else:
            version = server.connection.protocol_version if server.connection else None
            answer = await answered(server, caller, call, version)
        if self.answers is not None and answer is not None:
            await self.answers.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(answer)))


@contextmanager
def claimed_stdin() -> Iterator[BinaryIO]:
    """Stdin on a descriptor of its own while fd 0 reads the null device (as the SDK does when it opens
    stdin itself), so that no child process reads the client's requests; fd 0 is restored on exit."""
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    source = os.fdopen(private, "rb", buffering=0)
    try:
        yield source
    finally:
        os.dup2(private, 0)
        source.close()


@asynccontextmanager
async def _streams(server: GatewayServer, early: Early | None) -> AsyncIterator[Streams]:
    """Streams on the event loop where stdin and stdout allow it, else the SDK's threaded transport."""
    pipes = None
    if sys.platform != "win32" and server.gateway.settings.fast_stdio:
        from aai_gateway.mcp.pipes import open_pipes  # noqa: PLC0415 (fcntl: POSIX only)

        try:
            pipes = await open_pipes(early.unread if early else b"")
            if early is not None:
                pipes.reader.arrivals(early.replayed_lines, early.arrivals)
        except ValueError as exc:
            if early is not None and early.unread:
                raise RuntimeError(f"cannot go on with the session begun on stdin: {exc}") from exc
            log.debug("serving stdio through worker threads: %s", exc)
    if pipes is None:
        with claimed_stdin() as source:
            stdin = ScreenedStdin(source, server)
            # the SDK reads any async iterable of lines; its annotation names the anyio file it makes itself
            async with stdio_server(stdin=cast("anyio.AsyncFile[str]", stdin)) as (read_stream, write_stream):
                stdin.answers = write_stream
                yield read_stream, write_stream
        return
    from aai_gateway.mcp.wire.calls import FastCalls  # noqa: PLC0415 (with the pipes)

    pipes.writer.answered = early.answered if early else set()
    fast = FastCalls(server, pipes.writer)
    pipes.offering.shortcut = fast.take
    try:
        yield pipes.reader, pipes.writer
    finally:
        try:
            with anyio.CancelScope(shield=True):
                await fast.aclose()
        finally:
            pipes.close()


def serve_stdio(gateway: Gateway, early: Early | None = None) -> None:
    """Serve until stdin closes; `early` holds what was read and answered before the SDK was imported."""
    if early is not None:
        early.stop_reading()
    if early is not None and early.eof:
        anyio.run(gateway.aclose)
        return

    async def main() -> None:
        server = GatewayServer(gateway, transport="stdio")
        try:
            async with anyio.create_task_group() as group, _streams(server, early) as (read, write):
                stop = anyio.Event()
                group.start_soon(keep_fresh, server, stop)
                await server.server.run(read, write, server.initialization_options())
                stop.set()
                group.cancel_scope.cancel()
        finally:
            await gateway.aclose()

    loop.run(main)

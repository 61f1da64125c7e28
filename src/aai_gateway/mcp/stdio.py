"""MCP over stdio: nothing but protocol messages reach stdout."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.shared.message import SessionMessage

from aai_gateway.mcp import loop
from aai_gateway.mcp.reload import keep_fresh
from aai_gateway.mcp.sdk_private import ReadStream, WriteStream
from aai_gateway.mcp.server import GatewayServer
from aai_gateway.mcp.threaded import threaded_stdio
from aai_gateway.mcp.wire.early import Early
from aai_gateway.service import Gateway

log = logging.getLogger(__name__)

Streams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]


@asynccontextmanager
async def _streams(server: GatewayServer, early: Early | None) -> AsyncIterator[Streams]:
    """Streams on the event loop where stdin and stdout allow it, else through worker threads."""
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
        with threaded_stdio() as streams:
            yield streams
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


def serve_stdio(gateway: Gateway, early: Early | None = None, *, outdated: bool = False) -> None:
    """Serve until stdin closes; `early` holds what was read and answered before the SDK was imported,
    `outdated` that the listing it answered was not what the gateway lists (see mcp/wire/remembered.py)."""
    if early is not None:
        early.stop_reading()
    if early is not None and early.eof:
        anyio.run(gateway.aclose)
        return

    async def main() -> None:
        server = GatewayServer(gateway, transport="stdio")
        if outdated:  # the client is told before the answer to its next request
            await server.apps_changed(set())
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

"""MCP over stdio: nothing but protocol messages reach stdout.

Where the event loop can watch stdin and stdout and the handshake was answered before the SDK was
imported (wire/early.py), the front (wire/front.py) serves the session without the SDK until it asks for
something only the SDK serves; the SDK is then imported and serves the rest. Elsewhere the SDK serves
from the start, over the pipes or through worker threads.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from aai_gateway.mcp import loop
from aai_gateway.mcp.reload import keep_fresh
from aai_gateway.mcp.tools import Tools
from aai_gateway.mcp.wire.calls import FastCalls, LineWriter
from aai_gateway.mcp.wire.early import Early
from aai_gateway.mcp.wire.front import Front
from aai_gateway.service import Gateway

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from mcp.shared.message import SessionMessage

    from aai_gateway.mcp.pipes import Pipes, Shortcut
    from aai_gateway.mcp.sdk_private import ReadStream, WriteStream
    from aai_gateway.mcp.server import GatewayServer

    Streams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]

log = logging.getLogger(__name__)


async def _pipes(
    early: Early | None, unread: bytes, taking: Callable[[LineWriter], Shortcut] | None = None, offered: bytes = b""
) -> Pipes | None:
    """Stdin and stdout on the event loop, where they allow it (see `open_pipes`)."""
    from aai_gateway.mcp.pipes import open_pipes  # noqa: PLC0415 (fcntl: POSIX only)

    try:
        return await open_pipes(unread, taking, offered)
    except ValueError as exc:
        if early is not None and early.unread:
            raise RuntimeError(f"cannot go on with the session begun on stdin: {exc}") from exc
        log.debug("serving stdio through worker threads: %s", exc)
        return None


@asynccontextmanager
async def _streams(server: GatewayServer, early: Early | None) -> AsyncIterator[Streams]:
    """Streams on the event loop where stdin and stdout allow it, else through worker threads."""
    from aai_gateway.mcp.server import Connected  # noqa: PLC0415 (see the module's docstring)
    from aai_gateway.mcp.threaded import threaded_stdio  # noqa: PLC0415

    pipes = None
    if sys.platform != "win32" and server.gateway.settings.fast_stdio:
        pipes = await _pipes(early, early.unread if early else b"")
    if pipes is None:
        with threaded_stdio() as streams:
            yield streams
        return
    reader, sender = pipes.sdk_streams(early.answered if early else set())
    if early is not None:
        reader.arrivals(early.replayed_lines, early.arrivals)
    fast = FastCalls(Connected(server), pipes.writer)
    pipes.offering.shortcut = fast.take
    try:
        yield reader, sender
    finally:
        try:
            with anyio.CancelScope(shield=True):
                await fast.aclose()
        finally:
            pipes.close()


async def _serve_sdk(gateway: Gateway, early: Early | None, outdated: bool) -> None:
    """The SDK serves the whole session."""
    from aai_gateway.mcp.server import GatewayServer  # noqa: PLC0415 (see the module's docstring)

    server = GatewayServer(gateway, transport="stdio")
    if outdated:  # the client is told before the answer to its next request
        await server.apps_changed(set())
    async with anyio.create_task_group() as group, _streams(server, early) as (read, write):
        stop = anyio.Event()
        group.start_soon(keep_fresh, server, stop)
        await server.server.run(read, write, server.initialization_options())
        stop.set()
        group.cancel_scope.cancel()


async def _serve_front(gateway: Gateway, early: Early) -> None:
    """The front serves the session until it wants the SDK, which then serves the rest of it."""
    wanted, ended = asyncio.Event(), asyncio.Event()
    fronts: list[Front] = []

    def front_on(writer: LineWriter) -> Shortcut:
        fronts.append(Front(Tools(gateway), early, writer, wanted.set))
        return fronts[0].take

    pipes = await _pipes(early, early.replayed, front_on, early.rest)
    if pipes is None:
        return await _serve_sdk(gateway, early, outdated=False)
    front = fronts[0]

    def end(rest: bool) -> None:
        if rest:  # an unfinished last line: the SDK answers it, as it would have from the start
            front.want_sdk("an unfinished last line")
        ended.set()

    pipes.offering.when_ended(end)
    front.listen()
    try:
        async with anyio.create_task_group() as group:
            stop = anyio.Event()
            group.start_soon(keep_fresh, front, stop)
            await _either(wanted, ended)
            if wanted.is_set():
                await _hand_over(front, pipes, group)
            stop.set()
            group.cancel_scope.cancel()
    finally:
        try:
            with anyio.CancelScope(shield=True):
                await front.calls.aclose()
        finally:
            front.sdk_caller.cancel()
            pipes.close()


async def _hand_over(front: Front, pipes: Pipes, group: TaskGroup) -> None:
    """Import the SDK (off the event loop, so that the calls the front took run on), replay the session to
    it and let it serve until stdin ends."""
    await asyncio.to_thread(importlib.import_module, "aai_gateway.mcp.server")
    from aai_gateway.mcp.server import Connected, GatewayServer, ready_caller  # noqa: PLC0415

    server = GatewayServer(front.gateway, transport="stdio", tools=front.tools)
    front.server = server  # from now on the server hears of changes itself
    if front.outdated:  # the client is told once the SDK has seen the session
        await server.apps_changed(set())
    front.calls.session = Connected(server)
    pipes.offering.shortcut = front.calls.take

    async def connected() -> None:
        await server.connected.wait()
        if not front.sdk_caller.done():
            front.sdk_caller.set_result(ready_caller(server.connection, "stdio"))

    group.start_soon(connected)
    reader, sender = pipes.sdk_streams(front.answered)
    await server.server.run(reader, sender, server.initialization_options())


async def _either(*events: asyncio.Event) -> None:
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def serve_stdio(gateway: Gateway, early: Early | None = None, *, outdated: bool = False) -> None:
    """Serve until stdin closes; `early` holds what was read and answered before the SDK was imported,
    `outdated` that the listing it answered was not what the gateway lists (see mcp/wire/remembered.py)."""
    if early is not None:
        early.stop_reading()
    if early is not None and early.eof:
        anyio.run(gateway.aclose)
        return
    fronted = early is not None and early.settled and not outdated
    fronted = fronted and sys.platform != "win32" and gateway.settings.fast_stdio

    async def main() -> None:
        try:
            if fronted and early is not None:
                await _serve_front(gateway, early)
            else:
                await _serve_sdk(gateway, early, outdated)
        finally:
            await gateway.aclose()

    loop.run(main)

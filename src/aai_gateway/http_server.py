"""The HTTP server of `aai-gateway --web`: MCP over streamable HTTP at `/mcp`, the web UI at `/ui` beside it.

Sessions are kept (no handshake per call) and answers are plain JSON rather than an SSE stream,
which is what most clients want and is faster; server-to-client notifications travel on the
session's GET stream. The listening socket is made with IPPROTO_TCP so that asyncio switches on
TCP_NODELAY for every connection (with protocol 0 it does not, and each response waits ~40 ms for
a delayed ACK).

Every request to `/mcp` passes the bearer-token gate first (`mcp.bearer`), then goes to the fast path
for calls (`mcp.wire.http`) or straight to the SDK's transport, past Starlette's router and middleware,
which only the web UI needs. uvicorn parses HTTP with httptools, a dependency for that reason: it
costs about a fifth of a millisecond of CPU less per request than h11. The server runs on uvloop (`mcp.loop`).
This module sits above both `mcp/` and `web/`, which do not import each other.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from aai_gateway.mcp import loop
from aai_gateway.mcp.bearer import Bearer, Gate
from aai_gateway.mcp.http import MCP_PATH, security
from aai_gateway.mcp.reload import keep_fresh
from aai_gateway.mcp.sdk_private import http_problems
from aai_gateway.mcp.server import GatewayServer
from aai_gateway.mcp.wire.http import HttpCalls
from aai_gateway.service import Gateway
from aai_gateway.web import UI_PATH, Access, build_ui
from aai_gateway.web.security import SameSite, allowed_hosts

log = logging.getLogger(__name__)


def listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.setblocking(False)
    return sock


class McpFirst:
    """ASGI front: `/mcp` requests straight to the MCP transport, everything else (the UI, 404s, lifespan) to `app`.

    `gate` sees every `/mcp` request first, so that neither the transport nor `calls` serves one it refuses.
    With `calls`, the POSTs it answers itself (malformed ones, and calls with `fastHttp`) never reach the transport.
    """

    def __init__(self, app: ASGIApp, mcp: ASGIApp, calls: HttpCalls | None = None, gate: Gate | None = None) -> None:
        self.app = app
        self.mcp = mcp
        self.calls = calls
        self.gate = gate or Gate(None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == MCP_PATH:
            scope = trimmed(scope)
            if not await self.gate.admit(scope, send):
                return
            if self.calls is not None and scope["method"] == "POST":
                handed = await self.calls.serve(scope, receive, send)
                if handed is None:
                    return
                receive = handed
            await self.mcp(scope, receive, send)
        else:
            await self.app(scope, receive, send)


_OWS = (b" ", b"\t")


def trimmed(scope: Scope) -> Scope:
    """`scope` with whitespace around header values removed, as HTTP defines a field value (RFC 9110 §5.5):
    an `Mcp-Name: " tool "` header names `tool`. The HTTP parser leaves it, and the SDK compares values as sent."""
    headers = scope["headers"]
    if not any(value[:1] in _OWS or value[-1:] in _OWS for _, value in headers if value):
        return scope
    return {**scope, "headers": [(name, value.strip(b" \t")) for name, value in headers]}


def mcp_endpoint(app: Starlette) -> ASGIApp:
    """The ASGI app the SDK routes `/mcp` to."""
    for route in app.router.routes:
        if isinstance(route, Route) and route.path == MCP_PATH:
            endpoint: ASGIApp = route.app
            return endpoint
    raise LookupError(f"the MCP app has no route for {MCP_PATH}")


def build_app(
    server: GatewayServer, ui: Access | None = None, port: int | None = None, token_required: bool = False
) -> Starlette:
    """MCP at /mcp, and the web UI at /ui when `ui` (its login token) is given and enableWebUI is on."""
    settings = server.gateway.settings
    app = server.server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        host=settings.http_host,
        transport_security=security(settings.http_host, token_required),
    )
    if ui is not None and settings.enable_web_ui:

        async def rescan() -> set[str]:
            changed = server.gateway.rescan()
            if changed:
                await server.apps_changed(changed)
            return changed

        listening = settings.http_port if port is None else port
        shown = f"[{settings.http_host}]" if ":" in settings.http_host else settings.http_host
        server.gateway.consent.ui_url = f"http://{shown}:{listening}{UI_PATH}/consent"
        app.router.routes.append(
            Mount(UI_PATH, app=build_ui(server.gateway, ui, settings.http_host, listening, rescan))
        )
    return app


class WebServer(uvicorn.Server):
    """uvicorn's server, except that SIGINT or SIGTERM only ends the serving: uvicorn would raise the signal
    again as `serve` returns, and the gateway would die of it before closing (its MCP servers with it).
    `signals` keeps what arrived, for `reraise` once the gateway is closed."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.signals: list[int] = []

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    @contextmanager
    def handling_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handle(sig: int, frame: FrameType | None) -> None:
            self.signals.append(sig)
            self.handle_exit(sig, frame)

        originals = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, original in originals.items():
                signal.signal(sig, original)

    def reraise(self) -> None:
        """End as the signals that stopped the server would have ended the process (the last one first)."""
        for sig in reversed(self.signals):
            signal.raise_signal(sig)


def base_url(sock: socket.socket) -> str:
    """`http://host:port` of a listening socket, an IPv6 address in brackets."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve_http(
    gateway: Gateway,
    sock: socket.socket,
    ui: Access | None = None,
    bearer: Bearer | None = None,
    *,
    long_lived: bool = False,
) -> None:
    """Serve until interrupted, on an already listening socket; with `bearer`, `/mcp` requires its token.

    Once the gateway is closed, a SIGINT or SIGTERM that stopped it ends the process as that signal would
    have. `long_lived` is `serve`: it also runs the triggers of the approved saved workflows, and returns
    after a signal (its service manager wants exit status 0).
    """
    server = GatewayServer(gateway, transport="http")
    app = build_app(server, ui, sock.getsockname()[1], token_required=bearer is not None)
    manager = server.server.session_manager
    fast = gateway.settings.fast_http
    if fast and (problems := http_problems(manager)):
        log.warning("serving every HTTP request through the MCP SDK, whose internals changed: %s", "; ".join(problems))
        fast = False
    checks = security(gateway.settings.http_host, token_required=bearer is not None)
    calls = HttpCalls(server, manager, checks, fast=fast)
    # Everything beside /mcp (the UI, its redirects, 404s) answers only this gateway's own address.
    rest = SameSite(app, allowed_hosts(gateway.settings.http_host, sock.getsockname()[1]))
    front = McpFirst(rest, mcp_endpoint(app), calls, Gate(bearer))
    # Nothing stands between the gateway and its clients, so forwarded-for headers are not trusted.
    config = uvicorn.Config(
        front,
        log_level="warning",
        lifespan="on",
        access_log=False,
        proxy_headers=False,
        timeout_graceful_shutdown=3,
    )
    web = WebServer(config)
    print(f"aai-gateway: MCP over HTTP at {base_url(sock)}{MCP_PATH}", file=sys.stderr, flush=True)

    async def main() -> None:
        try:
            async with anyio.create_task_group() as group:
                stop = anyio.Event()
                group.start_soon(keep_fresh, server, stop)
                if long_lived:
                    group.start_soon(gateway.triggers().run)
                await web.serve(sockets=[sock])
                stop.set()
                group.cancel_scope.cancel()
        finally:
            await gateway.aclose()  # stops every MCP server: stdin closed, then SIGTERM, then SIGKILL

    with web.handling_signals():
        loop.run(main)
    if not long_lived:
        web.reraise()

"""`tools/call` POSTs of an established HTTP session, answered without the SDK's transport.

The SDK's streamable-HTTP path costs about two milliseconds a request on top of the call itself
(its session manager, transport, memory streams, per-request task group and model validation).
In the ASGI front, and only once the bearer-token gate (`bearer`) has admitted it, a POST to `/mcp`
is taken here when the SDK would serve it with nothing left to check: its session is open in the
SDK's session manager and one request of it has been served there (so its connection is known), the
protocol-version header is absent or of the handshake era, the body declares a size within the SDK's
limit, Accept allows JSON, Content-Type is JSON, Host and Origin pass the SDK's own DNS-rebinding
check, and the body is a single `tools/call` of `aai:exec` or `<appId>:<tool>`. The call then runs
through the same `GatewayServer.run` as on the SDK's path and is answered in the same wire form.
Anything else goes to the SDK, with the body already read handed on unchanged. A
`notifications/cancelled` for a call taken here cancels it, and the call's POST is
answered as the SDK answers a cancelled request.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from mcp.server.streamable_http import REQUEST_CANCELLED, StreamableHTTPServerTransport, check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from aai_gateway.mcp.fast_calls import (
    Call,
    answered,
    cancelled_id,
    encoded,
    jsonrpc_object,
    ready_caller,
    request_key,
    takeable,
)
from aai_gateway.mcp.server import GatewayServer
from aai_gateway.service import Caller

log = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
JSON = "application/json"


class HttpCalls:
    """`serve` answers a POST it can take and returns None, or returns the `receive` to hand the SDK."""

    def __init__(
        self, server: GatewayServer, manager: StreamableHTTPSessionManager, security: TransportSecuritySettings
    ) -> None:
        self.server = server
        self.manager = manager
        self.guard = TransportSecurityMiddleware(security)
        self._running: dict[tuple[str, tuple[type, int | str]], asyncio.Task[dict[str, Any]]] = {}

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        headers = headers_of(scope)
        session_id = headers.get(SESSION_HEADER)
        transport = self._open(session_id)
        if transport is None or session_id is None or not self._plain_post(headers):
            return receive
        connection = self.server.sessions.get(session_id)
        caller = ready_caller(connection, "http")
        if connection is None or caller is None:
            return receive
        request = Request(scope, receive)
        if not check_accept_headers(request)[0]:
            return receive
        refused = await self.guard.validate_request(request, is_post=True)
        if refused is not None:  # what the SDK would answer too, having checked the same things first
            await refused(scope, receive, send)
            return None

        received, body = await _body(receive)
        replay = _replaying(received, receive)
        if body is None:
            return replay
        message = jsonrpc_object(body)
        if message is None:
            return replay
        if message.get("method") == "notifications/cancelled":
            return None if await self._cancel(session_id, message, send) else replay
        call = takeable(self.server, message)
        if call is None or (session_id, request_key(call.request_id)) in self._running:
            return replay
        with holding(transport):
            answer = await self._answer(session_id, call, caller, connection.protocol_version)
        await _respond(send, 200, session_id, encoded(answer))
        log.debug("request %r of session %s answered in front of the SDK", call.request_id, session_id)
        return None

    def _open(self, session_id: str | None) -> StreamableHTTPServerTransport | None:
        """The SDK's transport of the session, when it is open and serves anyone (there is no per-user auth)."""
        if session_id is None or session_id in self.manager._session_owners:
            return None
        transport = self.manager._server_instances.get(session_id)
        if transport is None or transport.is_terminated:
            return None
        if transport.idle_scope is not None and transport.idle_scope.cancel_called:
            return None
        return transport

    def _plain_post(self, headers: dict[str, str]) -> bool:
        version = headers.get(VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False
        size = headers.get("content-length", "")
        if not size.isdigit() or int(size) > self.manager.max_request_body_size:
            return False
        kind = headers.get("content-type", "").split(";")[0]
        return any(part.strip() == JSON for part in kind.split(","))

    async def _answer(self, session_id: str, call: Call, caller: Caller, version: str) -> dict[str, Any]:
        key = (session_id, request_key(call.request_id))
        task = asyncio.create_task(answered(self.server, caller, call, version))
        self._running[key] = task
        try:
            await asyncio.wait({task})
        finally:
            self._running.pop(key, None)
            task.cancel()
        if task.cancelled():
            error = {"code": REQUEST_CANCELLED, "message": "Request cancelled"}
            return {"jsonrpc": "2.0", "id": call.request_id, "error": error}
        return task.result()

    async def _cancel(self, session_id: str, message: dict[str, Any], send: Send) -> bool:
        """Cancel a call taken here, answering the notification as the SDK does; False if it is not one of ours."""
        request_id = cancelled_id(message)
        if "id" in message or request_id is None:
            return False
        task = self._running.get((session_id, request_key(request_id)))
        if task is None:
            return False
        task.cancel()
        await _respond(send, 202, session_id, b"")
        return True


def headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name; the first of repeated ones, as Starlette reads them."""
    found: dict[str, str] = {}
    for name, value in scope["headers"]:
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found


async def _body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The messages received and the whole body; None for the body when the client left before sending it."""
    received: list[Message] = []
    chunks: list[bytes] = []
    while True:
        message = await receive()
        received.append(message)
        if message["type"] != "http.request":
            return received, None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return received, b"".join(chunks)


def _replaying(received: list[Message], receive: Receive) -> Receive:
    pending = list(received)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


async def _respond(send: Send, status: int, session_id: str, body: bytes) -> None:
    headers = [
        (b"content-length", str(len(body)).encode()),
        (b"content-type", JSON.encode()),
        (SESSION_HEADER.encode(), session_id.encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def holding(transport: StreamableHTTPServerTransport) -> Iterator[None]:
    """What the SDK's transport does around each request it serves: the session does not expire while one runs,
    and its idle countdown starts again when the last one ends."""
    timeout = transport._idle_timeout
    scope = transport.idle_scope
    if scope is None or timeout is None:
        yield
        return
    transport._requests_in_flight += 1
    scope.deadline = math.inf
    try:
        yield
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            scope.deadline = anyio.current_time() + timeout

"""POSTs to `/mcp` in front of the SDK's transport: malformed ones refused, calls of a session answered.

Every POST the SDK would parse (JSON, within its size limit, Accept and Host/Origin passing its own
checks, of the handshake era) is read here first, once the bearer-token gate (`bearer`) has admitted
it. A body that is not a JSON-RPC message MCP allows is answered here, 400 with the JSON-RPC error
(`screen`), whatever `fastHttp` says: the SDK would take a request with a null id for a notification.

With `fastHttp`, a `tools/call` of `aai:exec` or `<appId>:<tool>` is then answered here too, when the
SDK would serve it with nothing left to check: its session is open in the SDK's session manager and
one request of it has been served there (so its connection is known). The call runs through the same
`Tools.run` as on the SDK's path and is answered in the same wire form (about two
milliseconds a request less than the SDK's session manager, transport, memory streams and model
validation). Anything else goes to the SDK, with the body already read handed on unchanged. A
`notifications/cancelled` for a call taken here cancels it, and the call's POST is answered as the
SDK answers a cancelled request.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from mcp.server.streamable_http import REQUEST_CANCELLED, check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import Message as AsgiMessage
from starlette.types import Receive, Scope, Send

from aai_gateway.mcp.sdk_private import holding, open_transport
from aai_gateway.mcp.server import GatewayServer, ready_caller
from aai_gateway.mcp.wire.calls import EVERY, TAKEN, Call, answered, takeable
from aai_gateway.mcp.wire.jsonrpc import (
    Message,
    Refusal,
    cancelled_id,
    encoded,
    error,
    has_lone_surrogates,
    is_request_id,
    read,
    request_key,
    surrogate_refusal,
)
from aai_gateway.mcp.wire.screen import sdk_message
from aai_gateway.service import Caller

log = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
JSON = "application/json"


class HttpCalls:
    """`serve` answers a POST it can take and returns None, or returns the `receive` to hand the SDK.

    With `fast` off it only refuses malformed messages; every well-formed one goes to the SDK."""

    def __init__(
        self,
        server: GatewayServer,
        manager: StreamableHTTPSessionManager,
        security: TransportSecuritySettings,
        *,
        fast: bool = True,
    ) -> None:
        self.server = server
        self.manager = manager
        self.guard = TransportSecurityMiddleware(security)
        self.fast = fast
        self._running: dict[tuple[str, tuple[type, int | str]], asyncio.Task[dict[str, Any]]] = {}

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        headers = headers_of(scope)
        if not self._plain_post(headers):
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
        session_id = headers.get(SESSION_HEADER)
        message = read(body)
        if isinstance(message, Refusal):
            await _refuse(send, message, session_id)
            return None
        # The SDK's parser refuses half a surrogate pair, so a call holding one is served here, fast or not.
        unparseable = has_lone_surrogates(body, message)
        kinds = EVERY if unparseable else TAKEN
        if (
            (self.fast or unparseable)
            and session_id is not None
            and await self._served(session_id, message, send, kinds)
        ):
            return None
        if unparseable:
            return await self._refused_by_sdk(message, session_id, send, receive)
        checked = sdk_message(message)
        if isinstance(checked, Refusal):
            await _refuse(send, checked, session_id)
            return None
        return replay

    async def _refused_by_sdk(
        self, message: Message, session_id: str | None, send: Send, receive: Receive
    ) -> Receive | None:
        """A call holding half a surrogate pair that this front did not serve: it has no live session, or
        names no tool, so the SDK refuses it whatever its arguments say. The SDK gets it with each half
        replaced by "?" (its parser refuses the halves), so the refusal is the SDK's own, as for any such
        call. Only a request reusing the id of a call still running here would be served: that is refused."""
        request_id = message.body.get("id")
        if is_request_id(request_id) and (session_id or "", request_key(request_id)) in self._running:
            await _refuse(send, surrogate_refusal(), session_id)
            return None
        body = encoded(message.body, errors="replace")
        return _replaying([{"type": "http.request", "body": body, "more_body": False}], receive)

    async def _served(self, session_id: str, message: Message, send: Send, kinds: frozenset[str]) -> bool:
        """Whether the message was a call (or the cancelling of one) this front answered."""
        method = message.method
        if method not in ("tools/call", "notifications/cancelled"):
            return False
        transport = open_transport(self.manager, session_id)
        connection = self.server.sessions.get(session_id)
        caller = ready_caller(connection, "http")
        if transport is None or connection is None or caller is None:
            return False
        if method == "notifications/cancelled":
            return await self._cancel(session_id, message.body, send)
        call = takeable(self.server.tools, message.body, kinds)
        if call is None or (session_id, request_key(call.request_id)) in self._running:
            return False
        with holding(transport):
            answer = await self._answer(session_id, call, caller, connection.protocol_version)
        await _respond(send, 200, session_id, encoded(answer))
        log.debug("request %r of session %s answered in front of the SDK", call.request_id, session_id)
        return True

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
        task = asyncio.create_task(answered(self.server.tools, caller, call, version))
        self._running[key] = task
        try:
            await asyncio.wait({task})
        finally:
            self._running.pop(key, None)
            task.cancel()
        if task.cancelled():
            return error(call.request_id, REQUEST_CANCELLED, "Request cancelled")
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


async def _body(receive: Receive) -> tuple[list[AsgiMessage], bytes | None]:
    """The messages received and the whole body; None for the body when the client left before sending it."""
    received: list[AsgiMessage] = []
    chunks: list[bytes] = []
    while True:
        message = await receive()
        received.append(message)
        if message["type"] != "http.request":
            return received, None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return received, b"".join(chunks)


def _replaying(received: list[AsgiMessage], receive: Receive) -> Receive:
    pending = list(received)

    async def replay() -> AsgiMessage:
        return pending.pop(0) if pending else await receive()

    return replay


async def _refuse(send: Send, refusal: Refusal, session_id: str | None) -> None:
    """400 with the JSON-RPC error; a notification refused is accepted as any notification is, unanswered."""
    if refusal.answer is None:
        await _respond(send, 202, session_id, b"")
    else:
        await _respond(send, 400, session_id, encoded(refusal.answer))


async def _respond(send: Send, status: int, session_id: str | None, body: bytes) -> None:
    headers = [(b"content-length", str(len(body)).encode()), (b"content-type", JSON.encode())]
    if session_id is not None:
        headers.append((SESSION_HEADER.encode(), session_id.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})

"""`tools/call` of an operation over stdio, answered without the SDK's per-request machinery.

The SDK spends about a quarter of a millisecond of CPU on every request before and after its
handler runs (validation into models, middleware, a task group and several memory streams per
message). On stdio, once the client's session is set up and one of its requests has been served,
calls of `aai:exec` and `<appId>:<tool>` are taken off the wire here instead: parsed with `json`,
run by the same `GatewayServer.run` as the SDK path (same validation, consent, history, errors),
and answered in the same wire form. Everything else (the handshake, lists, guides, batches,
discovery, malformed requests, the 2026-07-28 era) goes to the SDK unchanged, and consent questions
still travel through the SDK's connection. A `notifications/cancelled` for a call taken here
cancels it, and no answer is sent, as the SDK does.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
from mcp import MCPError
from mcp.server.connection import Connection
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from aai_gateway.errors import AaiError
from aai_gateway.mcp.errors import answer, wire_error
from aai_gateway.mcp.names import Target
from aai_gateway.mcp.relay import ConnectionRelay
from aai_gateway.mcp.server import GatewayServer, asker_on, client_name
from aai_gateway.mcp.wire.jsonrpc import (
    INTERNAL_ERROR,
    Message,
    cancelled_id,
    encoded,
    error,
    is_request_id,
    read,
    request_key,
)
from aai_gateway.service import Caller

log = logging.getLogger(__name__)

TAKEN = frozenset({"exec", "direct", "run"})
EVERY = frozenset({"exec", "direct", "batch", "run", "wait", "guide", "discover", "search", "install"})
"""Every kind of tool: a call the SDK cannot parse (half a surrogate pair in its arguments) is served
by the wire whatever the tool."""


class LineWriter(Protocol):
    async def send_line(self, line: bytes) -> None: ...

    def hold(self, size: int) -> None:
        """`size` bytes of requests taken (negative: answered), for the writer to pace the reading by."""


class FastCalls:
    """Takes the calls it can answer from the read loop; `take` says whether it took a line."""

    def __init__(self, server: GatewayServer, writer: LineWriter) -> None:
        self.server = server
        self.writer = writer
        self._running: dict[tuple[type, int | str], asyncio.Task[None]] = {}
        self._caller: tuple[object, Caller] | None = None

    def take(self, line: bytes) -> bool:
        if b"tools/call" not in line and b"notifications/cancelled" not in line:
            return False
        caller = self._ready_caller()
        if caller is None:
            return False
        message = read(line)
        if not isinstance(message, Message):
            return False  # the read stream answers it, in order
        if message.method == "notifications/cancelled":
            return self._cancel(cancelled_id(message.body))
        call = takeable(self.server, message.body)
        if call is None or request_key(call.request_id) in self._running:
            return False
        key = request_key(call.request_id)
        task = asyncio.create_task(self._answer(call, caller))
        self._running[key] = task
        self.writer.hold(len(line))
        task.add_done_callback(lambda _: self._done(key, len(line)))
        return True

    def _done(self, key: tuple[type, int | str], size: int) -> None:
        self._running.pop(key, None)
        self.writer.hold(-size)

    async def aclose(self) -> None:
        """The client went away: cancel what is still running, as the SDK does with its own requests."""
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _ready_caller(self) -> Caller | None:
        """The caller of this connection, once `ready_caller` has one (kept: a ready connection stays ready)."""
        connection = self.server.connection
        if self._caller is not None and self._caller[0] is connection:
            return self._caller[1]
        caller = ready_caller(connection, "stdio")
        if caller is not None:
            self._caller = (connection, caller)
        return caller

    def _cancel(self, request_id: int | str | None) -> bool:
        task = self._running.get(request_key(request_id)) if request_id is not None else None
        if task is None:
            return False
        task.cancel()
        return True

    async def _answer(self, call: Call, caller: Caller) -> None:
        version = self.server.connection.protocol_version if self.server.connection else None
        answer = await answered(self.server, caller, call, version)
        await self.writer.send_line(encoded(answer))
        log.debug("request %r answered off the wire", call.request_id)


@dataclass(frozen=True, slots=True)
class Call:
    request_id: int | str
    target: Target
    arguments: dict[str, Any]
    meta: Any = None
    """The request's `params._meta`, as sent."""


def ready_caller(connection: Connection | None, transport: str) -> Caller | None:
    """The caller behind a connection whose handshake is done, on the handshake era; else None: the SDK
    serves the session. Over HTTP consent questions travel on the session's standalone stream."""
    if connection is None or not connection.initialize_accepted:
        return None
    if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    ask = asker_on(connection, standalone=transport == "http")
    relay = ConnectionRelay(connection)
    return Caller(name=client_name(connection.client_params), transport=transport, ask=ask, relay=relay)


def takeable(server: GatewayServer, message: dict[str, Any], kinds: frozenset[str] = TAKEN) -> Call | None:
    """The call in a JSON-RPC message when it is a `tools/call` of a tool of `kinds` (by default those the
    fast paths take), else None."""
    params = message.get("params")
    if message.get("method") != "tools/call" or not isinstance(params, dict):
        return None
    request_id = message.get("id")
    name, arguments = params.get("name"), params.get("arguments")
    if not is_request_id(request_id) or not isinstance(name, str):
        return None
    if not (arguments is None or isinstance(arguments, dict)):
        return None
    meta = params.get("_meta")
    if isinstance(meta, dict) and "progressToken" in meta:  # progress is sent on the SDK's path
        return None
    target = server.names.resolve(name)
    if target is None or target.kind not in kinds:
        return None
    return Call(request_id, target, arguments or {}, params.get("_meta"))


async def answered(server: GatewayServer, caller: Caller, call: Call, version: str | None) -> dict[str, Any]:
    """The JSON-RPC answer to `call`, as the SDK's path would give it."""
    request_id = call.request_id
    try:
        result = await server.run(caller, call.target, call.arguments, call.meta)
    except AaiError as exc:
        try:
            result = answer(exc, server.gateway.settings.error_style)
        except MCPError as refused:
            return {"jsonrpc": "2.0", "id": request_id, "error": wire_error(refused)}
    except Exception:
        log.exception("the call of request %r failed unexpectedly", request_id)
        return error(request_id, INTERNAL_ERROR, "Internal error")
    return {"jsonrpc": "2.0", "id": request_id, "result": _wire(result, version)}


def _wire(result: types.CallToolResult, version: str | None) -> dict[str, Any]:
    """The result as the SDK would put it on the wire; a plain text answer, the common case, built directly."""
    content = result.content
    if (
        len(content) == 1
        and isinstance(content[0], types.TextContent)
        and content[0].annotations is None
        and content[0].meta is None
        and result.structured_content is None
        and result.meta is None
    ):
        return {"content": [{"text": content[0].text, "type": "text"}], "isError": result.is_error}
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return serialize_server_result("tools/call", version or "", dumped) if version else dumped

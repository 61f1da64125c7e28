"""The gateway's front: every message passes `screened` before the SDK sees it, on every transport.

The SDK leaves some malformed messages unanswered (its stdio transport drops a line it cannot parse,
its HTTP transport takes a request with a null id for a notification) and silently replaces invalid
UTF-8; here each is refused by the book instead, in the same words whichever path then serves it.
"""

from __future__ import annotations

import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from aai_gateway.mcp.wire.jsonrpc import INVALID_REQUEST, Message, Refusal, error, is_request_id, read, refused


def screened(data: bytes) -> SessionMessage | Refusal:
    """The SDK's message for `data`, or the refusal to answer instead."""
    verdict = read(data)
    if isinstance(verdict, Refusal):
        return refused(verdict)
    return sdk_message(verdict)


def sdk_message(message: Message) -> SessionMessage | Refusal:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(message.body, by_name=False))
    except ValidationError as exc:
        request_id = message.body.get("id")
        known = request_id if is_request_id(request_id) else None
        reason = f"not a JSON-RPC message MCP knows ({exc.error_count()} problems)"
        answer = error(known, INVALID_REQUEST, f"Invalid Request: {reason}") if "id" in message.body else None
        return refused(Refusal(answer, reason))


def refusal_message(refusal: Refusal) -> SessionMessage | None:
    """A refusal as the SDK's own message, for a transport that writes only those."""
    if refusal.answer is None:
        return None
    return SessionMessage(types.JSONRPCError.model_validate(refusal.answer))

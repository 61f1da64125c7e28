"""JSON-RPC 2.0 as MCP allows it: reading one message, refusing a malformed one, writing answers.

`read` is the only parser of the messages the gateway answers itself and the screen every message
passes before the SDK sees it, over stdio and HTTP alike. It never raises: a message is either a
`Message` (a JSON object that is a request, a notification or a response in MCP's shape) or a
`Refusal` carrying the error to answer (or none, for a notification).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, TypeGuard

from aai_gateway import json_text

log = logging.getLogger("aai_gateway.mcp.wire.screen")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
MAX_DEPTH = 128
"""Deepest nesting of objects and arrays accepted in one message. The SDK's parser gives up at 200
levels; refusing earlier, and the same way on every path, keeps the gateway's answers the same with
its fast paths on or off, and keeps a message nested thousands deep from exhausting the stack."""


@dataclass(slots=True)  # not frozen: one is made for every line, and a frozen one takes 0.3 µs more
class Message:
    body: dict[str, Any]

    @property
    def method(self) -> object:
        return self.body.get("method")


@dataclass(frozen=True, slots=True)
class Refusal:
    answer: dict[str, Any] | None
    """The JSON-RPC error to send back; None for a notification, which is never answered."""
    reason: str


def refused(refusal: Refusal) -> Refusal:
    """`refusal`, logged: every path that refuses a message says so in these words."""
    log.info("refused a malformed message: %s", refusal.reason)
    return refusal


def read(data: bytes) -> Message | Refusal:
    """The JSON-RPC message in `data` (one stdio line, one HTTP body), or why it is refused."""
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        return _parse_error(f"invalid UTF-8 at byte {exc.start}")
    try:
        body = _DECODE(text)
    except RecursionError:
        return _parse_error(f"nested deeper than {MAX_DEPTH} levels")
    except ValueError as exc:
        return _parse_error(exc.args[0] if exc.args else "not JSON")
    if (b"\\ud" in data or b"\\uD" in data) and not _whole_unicode(_outside_arguments(body)):
        return surrogate_refusal()
    if isinstance(body, list):
        return _invalid(None, "batches are not supported (MCP sends one message at a time)")
    if not isinstance(body, dict):
        return _invalid(None, "a message must be a JSON object")
    request_id = body.get("id")
    known_id = request_id if is_request_id(request_id) else None
    if body.get("jsonrpc") != "2.0":
        return _invalid(known_id, '"jsonrpc" must be "2.0"')
    if "id" in body and known_id is None:
        return _invalid(None, '"id" must be a string or an integer')
    if (data.count(b"{") + data.count(b"[")) > MAX_DEPTH and _depth(body) > MAX_DEPTH:
        return _invalid(known_id, f"nested deeper than {MAX_DEPTH} levels")
    if "method" in body:
        method, params = body["method"], body.get("params")
        if not isinstance(method, str):
            return _invalid(known_id, '"method" must be a string')
        if "params" in body and not isinstance(params, dict):
            if known_id is None:
                return Refusal(None, f"notification {method} with params that are not an object")
            return _invalid(known_id, '"params" must be an object')
        return Message(body)
    if known_id is None:
        return _invalid(None, 'a message needs a "method", or an "id" and a "result" or an "error"')
    if ("result" in body) == ("error" in body):
        return _invalid(known_id, 'a response carries either a "result" or an "error"')
    return Message(body)


def is_request_id(value: object) -> TypeGuard[int | str]:
    """A JSON-RPC request id as MCP allows it: a string or an integer (not a boolean, not null)."""
    return isinstance(value, int | str) and not isinstance(value, bool)


def request_key(request_id: int | str) -> tuple[type, int | str]:
    """Requests 1 and "1" are different requests."""
    return (type(request_id), request_id)


def cancelled_id(body: dict[str, Any]) -> int | str | None:
    """The request a `notifications/cancelled` message names; None when it names none."""
    params = body.get("params")
    request_id = params.get("requestId") if isinstance(params, dict) else None
    return request_id if is_request_id(request_id) else None


def error(request_id: int | str | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def encoded(message: dict[str, Any], errors: str = "strict") -> bytes:
    """One message as the SDK writes it: compact JSON, non-ASCII as is (without the newline). With
    `errors="replace"`, half a surrogate pair is written as "?"."""
    return _ENCODER(message).encode(errors=errors)


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


_DECODE = json_text.decoder(json.JSONDecoder(parse_constant=_not_json))
_ENCODER = json_text.encoder(compact=True)


def _parse_error(reason: str) -> Refusal:
    return Refusal(error(None, PARSE_ERROR, f"Parse error: {reason}"), reason)


def _invalid(request_id: int | str | None, reason: str) -> Refusal:
    return Refusal(error(request_id, INVALID_REQUEST, f"Invalid Request: {reason}"), reason)


def _whole_unicode(body: object) -> bool:
    """Whether every string can be written back as UTF-8 (no lone surrogate from a \\u escape)."""
    try:
        json.dumps(body, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    except RecursionError:
        return True  # refused for its depth next
    return True


def surrogate_refusal() -> Refusal:
    return _parse_error("a \\u escape names half of a surrogate pair")


def _outside_arguments(body: object) -> object:
    """`body` without the arguments of a `tools/call`: half a surrogate pair there is the call's invalid
    parameter, refused and recorded by the call's own path (which names the field); anywhere else in a
    message (its id, its method, a tool's name) it is a parse error."""
    if not isinstance(body, dict) or body.get("method") != "tools/call" or not isinstance(body.get("params"), dict):
        return body
    params = {key: value for key, value in body["params"].items() if key != "arguments"}
    return {**body, "params": params}


def has_lone_surrogates(data: bytes, message: Message) -> bool:
    """Whether a message `read` let through holds half a surrogate pair (in a call's arguments): the
    SDK's own parser refuses such a message, so the front serves it."""
    return (b"\\ud" in data or b"\\uD" in data) and not _whole_unicode(message.body)


def _depth(value: object) -> int:
    """How deeply objects and arrays nest in `value`, without recursion."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, level = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        pending.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest

"""Malformed MCP messages and the answer each must get, on every transport.

Each case is the raw bytes of one message (one stdio line, one HTTP body) and what must come back: a
JSON-RPC error's code and id, or None for a notification, which is never answered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes
    code: int | None
    """None: no answer (a notification)."""
    id: int | str | None = None
    stdio_only: bool = False


def _m(**fields: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


PING = _m(id=9001, method="ping")
ECHO: dict[str, Any] = {"name": "aai_exec", "arguments": {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "x"}}}


def _deep(levels: int) -> bytes:
    args = "[" * levels + "]" * levels
    return (
        b'{"jsonrpc":"2.0","id":9002,"method":"tools/call","params":{"name":"aai_exec","arguments":'
        + b'{"app":"dev.aai.echo","tool":"echo","args":'
        + args.encode()
        + b"}}}"
    )


def _text(raw: bytes) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":9003,"method":"tools/call","params":{"name":"aai_exec","arguments":{"app":"dev.aai.echo","tool":"echo","args":{"text":"'
        + raw
        + b'"}}}}'
    )


CASES: list[Case] = [
    # not JSON, or not UTF-8: a parse error, id null
    Case("words", b"not json", PARSE_ERROR),
    Case("open brace", b"{", PARSE_ERROR),
    Case("truncated", PING[:-1], PARSE_ERROR),
    Case("byte order mark", b"\xef\xbb\xbf" + PING, PARSE_ERROR),
    Case("two messages on one line", PING + PING, PARSE_ERROR),
    Case("trailing garbage", PING + b" x", PARSE_ERROR),
    Case("leading garbage", b"abc" + PING, PARSE_ERROR),
    Case("single quotes", b"{'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}", PARSE_ERROR),
    Case("trailing comma", b'{"jsonrpc":"2.0","id":1,"method":"ping",}', PARSE_ERROR),
    Case("comment", b'/* hi */{"jsonrpc":"2.0","id":1,"method":"ping"}', PARSE_ERROR),
    Case("unterminated string", b'{"jsonrpc":"2.0","id":"abc,"method":"ping"}', PARSE_ERROR),
    Case("raw tab in a string", _text(b"a\tb"), PARSE_ERROR),
    Case("bad escape", _text(b"\\x41"), PARSE_ERROR),
    Case("NaN", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":NaN}}', PARSE_ERROR),
    Case("Infinity", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":-Infinity}}', PARSE_ERROR),
    Case("integer of 5000 digits", b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}', PARSE_ERROR),
    Case("invalid UTF-8 in an argument", _text(b"caf\xe9"), PARSE_ERROR),
    Case("0xff 0xfe in an argument", _text(b"\xff\xfe"), PARSE_ERROR),
    Case("overlong UTF-8", _text(b"\xc0\xaf"), PARSE_ERROR),
    Case("UTF-8 surrogate", _text(b"\xed\xa0\x80"), PARSE_ERROR),
    Case("truncated UTF-8", _text(b"\xe2\x82"), PARSE_ERROR),
    Case("invalid UTF-8 in a key", b'{"jsonrpc":"2.0","id":1,"method":"ping","\xff":1}', PARSE_ERROR),
    # half a surrogate pair outside a call's arguments (in an argument it is that call's INVALID_PARAMS)
    Case("lone surrogate escape in a tool name", _text(b"x").replace(b"aai_exec", b"aai_\\udc00exec"), PARSE_ERROR),
    Case("lone surrogate escape in an id", b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', PARSE_ERROR),
    Case("NUL byte", b"\x00", PARSE_ERROR),
    Case("UTF-16", PING.decode().encode("utf-16-le"), PARSE_ERROR),
    Case("nested 10,000 deep in args", _deep(10_000), PARSE_ERROR),
    Case("nested 10,000 deep in an id", b'{"jsonrpc":"2.0","id":' + b"[" * 10_000 + b"]" * 10_000 + b"}", PARSE_ERROR),
    Case(
        "nested 10,000 deep, no id",
        b'{"jsonrpc":"2.0","method":"x","params":{"a":' + b"{" * 10_000 + b"}" * 10_000 + b"}}",
        PARSE_ERROR,
    ),
    Case("20 MB of garbage", b"\x01garbage" * (20 << 17), PARSE_ERROR, stdio_only=True),
    # JSON, but not a JSON-RPC message MCP allows: an invalid request, with the id where it is a valid one
    Case("nested 500 deep in args", _deep(500), INVALID_REQUEST, 9002),
    Case("nested 130 deep in args", _deep(130), INVALID_REQUEST, 9002),
    Case("empty object", b"{}", INVALID_REQUEST),
    Case("empty batch", b"[]", INVALID_REQUEST),
    Case("batch", b"[" + PING + b"," + PING + b"]", INVALID_REQUEST),
    Case("string", b'"ping"', INVALID_REQUEST),
    Case("number", b"42", INVALID_REQUEST),
    Case("null", b"null", INVALID_REQUEST),
    Case("true", b"true", INVALID_REQUEST),
    Case("jsonrpc missing", b'{"id":9004,"method":"ping"}', INVALID_REQUEST, 9004),
    Case("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":9004,"method":"ping"}', INVALID_REQUEST, 9004),
    Case("jsonrpc a number", b'{"jsonrpc":2.0,"id":9004,"method":"ping"}', INVALID_REQUEST, 9004),
    Case("jsonrpc with a space", b'{"jsonrpc":"2.0 ","id":"a","method":"ping"}', INVALID_REQUEST, "a"),
    Case("JSONRPC upper case", b'{"JSONRPC":"2.0","id":9004,"method":"ping"}', INVALID_REQUEST, 9004),
    Case("jsonrpc 1.0 without id", b'{"jsonrpc":"1.0","method":"ping"}', INVALID_REQUEST),
    Case("id null", _m(id=None, method="ping"), INVALID_REQUEST),
    Case("id null on a call", _m(id=None, method="tools/call", params=ECHO), INVALID_REQUEST),
    Case("id 1.5", _m(id=1.5, method="ping"), INVALID_REQUEST),
    Case("id 1.0", b'{"jsonrpc":"2.0","id":1.0,"method":"ping"}', INVALID_REQUEST),
    Case("id 1e400", b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}', INVALID_REQUEST),
    Case("id an object", _m(id={"a": 1}, method="ping"), INVALID_REQUEST),
    Case("id an array", _m(id=[1], method="ping"), INVALID_REQUEST),
    Case("id true", _m(id=True, method="ping"), INVALID_REQUEST),
    Case("id false on a call", _m(id=False, method="tools/call", params=ECHO), INVALID_REQUEST),
    Case("method a number", _m(id=9005, method=1), INVALID_REQUEST, 9005),
    Case("method null", _m(id=9005, method=None), INVALID_REQUEST, 9005),
    Case("method an array", _m(id=9005, method=["ping"]), INVALID_REQUEST, 9005),
    Case("method an object", _m(id=9005, method={}), INVALID_REQUEST, 9005),
    Case("method a number, no id", _m(method=1, params="bar"), INVALID_REQUEST),
    Case("params an array", _m(id=9006, method="tools/call", params=["aai_exec", {}]), INVALID_REQUEST, 9006),
    Case("params a string", _m(id=9006, method="ping", params="x"), INVALID_REQUEST, 9006),
    Case("params a number", _m(id=9006, method="ping", params=3), INVALID_REQUEST, 9006),
    Case("params true", _m(id=9006, method="ping", params=True), INVALID_REQUEST, 9006),
    Case("only jsonrpc", b'{"jsonrpc":"2.0"}', INVALID_REQUEST),
    Case("result without id", _m(result={}), INVALID_REQUEST),
    Case("response with neither result nor error", _m(id=9007), INVALID_REQUEST, 9007),
    Case(
        "response with both result and error",
        _m(id=9007, result={}, error={"code": 1, "message": "x"}),
        INVALID_REQUEST,
        9007,
    ),
    # notifications: never answered, whatever is wrong with them
    Case("notification with array params", _m(method="notifications/initialized", params=[1]), None),
    Case("cancellation with string params", _m(method="notifications/cancelled", params="9001"), None),
]

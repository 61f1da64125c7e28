"""`tools/call` of an operation over stdio, answered without the SDK's per-request machinery.

The SDK spends about a quarter of a millisecond of CPU on every request before and after its
handler runs (validation into models, middleware, a task group and several memory streams per
message). On stdio, once the client's session is set up and one of its requests has been served,
calls of `aai:exec` and `<appId>:<tool>` are taken off the wire here instead: parsed with `json`,
run by the same `Tools.run` as the SDK path (same validation, consent, history, errors), and
answered in the same wire form. Everything else (the handshake, lists, guides, batches, discovery,
malformed requests, the 2026-07-28 era) goes to the SDK unchanged, and consent questions still
travel through the SDK's connection. A `notifications/cancelled` for a call taken here cancels it,
and no answer is sent, as the SDK does.

Which session the calls belong to, and who their caller is, is the `Session`'s to say: the SDK's
connection (mcp/stdio.py), or, before the SDK is imported, the handshake answered at start
(`front.py`). This module imports nothing of the SDK.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Protocol

from aai_gateway.errors import AaiError
from aai_gateway.mcp.errors import error_body, to_result
from aai_gateway.mcp.names import Target
from aai_gateway.mcp.results import on_the_wire
from aai_gateway.mcp.tools import Tools
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

CONNECTION_CLOSED = -32000
CLOSING_WRITE = 2.0
"""Seconds the answer to a call cut off by the client going away may take to write."""
TAKEN = frozenset({"exec", "direct", "run"})
EVERY = frozenset({"exec", "direct", "batch", "run", "wait", "guide", "discover", "search", "install"})
"""Every kind of tool: a call the SDK cannot parse (half a surrogate pair in its arguments) is served
by the wire whatever the tool."""


class LineWriter(Protocol):
    async def send_line(self, line: bytes) -> None: ...

    def hold(self, size: int) -> None:
        """`size` bytes of requests taken (negative: answered), for the writer to pace the reading by."""


class Session(Protocol):
    """The stdio session calls are taken for."""

    @property
    def tools(self) -> Tools: ...

    @property
    def version(self) -> str | None:
        """The protocol version the session agreed on."""

    @property
    def kinds(self) -> frozenset[str]:
        """The kinds of tool whose calls are taken."""

    def caller(self) -> Caller | None:
        """Who calls, once the session is set up for calls to be taken; None leaves every line to the SDK."""


class FastCalls:
    """Takes the calls it can answer from the read loop; `take` says whether it took a line."""

    def __init__(self, session: Session, writer: LineWriter) -> None:
        self.session = session
        """Replaced when the SDK takes the session over from the front (mcp/stdio.py)."""
        self.writer = writer
        self._loop = asyncio.get_running_loop()
        """Kept: asking for the running loop costs a getpid system call on every call (Python 3.11)."""
        self._running: dict[tuple[type, int | str], asyncio.Task[None]] = {}
        self._cancelled: set[tuple[type, int | str]] = set()
        self._closing = False

    def take(self, line: bytes) -> bool:
        if b"tools/call" not in line and b"notifications/cancelled" not in line:
            return False
        session = self.session
        caller = session.caller()
        if caller is None:
            return False
        message = read(line)
        if not isinstance(message, Message):
            return False  # the read stream answers it, in order
        if message.method == "notifications/cancelled":
            return self._cancel(cancelled_id(message.body))
        call = takeable(session.tools, message.body, session.kinds)
        if call is None or request_key(call.request_id) in self._running:
            return False
        key = request_key(call.request_id)
        task = self._loop.create_task(self._answer(session, call, caller))
        self._running[key] = task
        self.writer.hold(len(line))
        task.add_done_callback(lambda _: self._done(key, len(line)))
        return True

    def _done(self, key: tuple[type, int | str], size: int) -> None:
        self._running.pop(key, None)
        self._cancelled.discard(key)
        self.writer.hold(-size)

    async def aclose(self) -> None:
        """The client went away: cancel what is still running, each answered "Connection closed" as the SDK
        answers its own requests then (but those the client cancelled itself)."""
        self._closing = True
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _cancel(self, request_id: int | str | None) -> bool:
        """Cancel a call taken here; False when `request_id` is none of them."""
        key = request_key(request_id) if request_id is not None else None
        task = self._running.get(key) if key is not None else None
        if task is None or key is None:
            return False
        self._cancelled.add(key)
        task.cancel()
        return True

    async def _answer(self, session: Session, call: Call, caller: Caller) -> None:
        try:
            answer = await answered(session.tools, caller, call, session.version)
        except asyncio.CancelledError:
            key = request_key(call.request_id)
            if self._closing and key not in self._cancelled:
                closed = error(call.request_id, CONNECTION_CLOSED, "Connection closed")
                with suppress(Exception):
                    await asyncio.wait_for(self.writer.send_line(encoded(closed)), CLOSING_WRITE)
            raise
        await self.writer.send_line(encoded(answer))
        log.debug("request %r answered off the wire", call.request_id)


@dataclass(frozen=True, slots=True)
class Call:
    request_id: int | str
    target: Target
    arguments: dict[str, Any]
    meta: Any = None
    """The request's `params._meta`, as sent."""


def takeable(tools: Tools, message: dict[str, Any], kinds: frozenset[str] = TAKEN) -> Call | None:
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
    target = tools.names.resolve(name)
    if target is None or target.kind not in kinds:
        return None
    return Call(request_id, target, arguments or {}, params.get("_meta"))


async def answered(tools: Tools, caller: Caller, call: Call, version: str | None) -> dict[str, Any]:
    """The JSON-RPC answer to `call`, as the SDK's path would give it."""
    request_id = call.request_id
    try:
        result = await tools.run(caller, call.target, call.arguments, call.meta)
    except AaiError as exc:
        if tools.gateway.settings.error_style != "result":  # as `errors.answer` raises it
            return {"jsonrpc": "2.0", "id": request_id, "error": error_body(exc)}
        result = to_result(exc)
    except Exception:
        log.exception("the call of request %r failed unexpectedly", request_id)
        return error(request_id, INTERNAL_ERROR, "Internal error")
    return {"jsonrpc": "2.0", "id": request_id, "result": on_the_wire(result, version)}

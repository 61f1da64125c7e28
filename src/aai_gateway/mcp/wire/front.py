"""A stdio session served before the MCP SDK is imported, until it asks for something only the SDK serves.

The SDK and its types take about 38 MB of the gateway's memory and a third of a second to import.
Most sessions need little of it: after the handshake (answered in early.py) an agent lists the tools,
reads a guide and calls operations. Here those calls (`calls.py` takes them, as it does once the SDK
serves), pings and the listings of tools, resources and prompts (which some clients ask for at start)
are answered straight from the gateway, and a malformed line is refused in the SDK path's words. The
first line this front does not serve (`resources/read`, a batch, a call asking for progress...) has the
SDK imported: the session is replayed to it as early.py describes, the line and all after it are its to
serve, and the calls this front took meanwhile run on. A call that must ask the user (consent, or a question an
MCP server relays) has the SDK imported too, and asks through the SDK's connection once it is up; so
does a change of apps, which the SDK tells the client of.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from aai_gateway.consent import Answer, Question
from aai_gateway.mcp import listings
from aai_gateway.mcp.forms import takes_forms
from aai_gateway.mcp.reload import Served
from aai_gateway.mcp.tools import Tools
from aai_gateway.mcp.wire.calls import TAKEN, FastCalls, LineWriter
from aai_gateway.mcp.wire.early import Early, listing
from aai_gateway.mcp.wire.jsonrpc import Refusal, cancelled_id, encoded, is_request_id, read, refused
from aai_gateway.relay import Relay
from aai_gateway.service import Caller, Gateway

log = logging.getLogger(__name__)

KINDS = TAKEN | {"guide"}
"""Calls taken before the SDK is imported: those the fast path takes, and an app's guide, which an agent
reads before its first call."""


LISTED = {"resources/templates/list": listings.templates, "prompts/list": listings.prompts}
ANSWERED = frozenset({"ping", "tools/list", "resources/list", *LISTED})
"""Requests without params the front answers itself (the first page of each listing is the whole listing)."""


class Front:
    """The session before the SDK serves it; `take` is the pipes' shortcut until then."""

    kinds = KINDS

    def __init__(
        self,
        tools: Tools,
        early: Early,
        writer: LineWriter,
        want_sdk: Callable[[], None],
    ) -> None:
        self.tools = tools
        self.version: str | None = early.version
        self.answered = early.answered
        """Requests answered before the SDK serves, or made up for it: its answers to them are not sent."""
        self._writer = writer
        self._want_sdk = want_sdk
        self.wanted = False
        """Whether the SDK was asked for."""
        self.sdk_caller: asyncio.Future[Caller | None] = asyncio.get_running_loop().create_future()
        """The caller on the SDK's connection, once the SDK serves the session (None if it has none)."""
        client = early.client or {}
        ask = self._ask if takes_forms(client.get("capabilities")) else None
        name = client.get("clientInfo", {}).get("name", "unknown")  # early.py checked it is a string
        self._caller = Caller(name=name, transport="stdio", ask=ask, relay=_Relay(self))
        self.calls = FastCalls(self, writer)
        self._answering: set[asyncio.Task[None]] = set()
        self.server: Served | None = None
        """The SDK's server, once it serves the session."""
        self.outdated = False
        """Whether the apps changed before the SDK served: it tells the client when it starts."""

    def listen(self) -> None:
        """Hear the gateway's own notices of changed apps (an MCP server's tools changed)."""
        self.gateway.listeners.append(self._told)

    @property
    def gateway(self) -> Gateway:
        return self.tools.gateway

    def caller(self) -> Caller | None:
        return self._caller

    def take(self, line: bytes) -> bool:
        """Whether the line was served here; any other line but the handshake's own has the SDK imported.

        Once a line waits for the SDK, the lines after it that are not calls wait too, so that their
        answers keep their order (a refusal's id may be null, and only its place tells whose it is)."""
        if self.calls.take(line):
            return True
        if self.wanted:
            return False
        message = read(line)
        if isinstance(message, Refusal):
            if message.answer is not None:
                self._answer(message.answer)
            refused(message)
            return True
        served = self._served(message.body)
        if served is None:
            method = message.method
            self.want_sdk(repr(method) if isinstance(method, str) else "a line only the SDK reads")
            return False
        return served

    def _served(self, message: dict[str, Any]) -> bool | None:
        """True when answered here, False when the SDK sees it when it starts; None when the SDK must."""
        method, request_id, params = message.get("method"), message.get("id"), message.get("params")
        if isinstance(method, str) and method in ANSWERED and is_request_id(request_id) and not params:
            self._answer({"jsonrpc": "2.0", "id": request_id, "result": self._result(method)})
            return True
        if method == "notifications/initialized":
            return False  # replayed to the SDK when it starts, as if it had seen it then
        if method == "notifications/cancelled" and "id" not in message:
            # of a call already answered: nothing the SDK would serve has been read yet
            log.debug("dropped the cancelling of request %r: no such call", cancelled_id(message))
            return True
        return None

    def _result(self, method: str) -> dict[str, Any]:
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": listing(self.gateway)}
        return listings.resources(self.gateway) if method == "resources/list" else LISTED[method]()

    def want_sdk(self, reason: str) -> None:
        if not self.wanted:
            log.debug("the session is served by the MCP SDK from now on, for %s", reason)
            self.wanted = True
            self._want_sdk()

    async def apps_changed(self, app_ids: set[str]) -> None:
        """Tell the client these apps changed: through the SDK's server once it serves; before, the names
        are worked out again and the SDK is imported to tell it."""
        if self.server is not None:
            await self.server.apps_changed(app_ids)
            return
        self.tools.forget()
        self.outdated = True
        self.want_sdk("a change of apps")

    async def _told(self, app_ids: set[str]) -> None:
        """The gateway's own notice (an MCP server's tools changed); the SDK's server hears it itself."""
        if self.server is None:
            await self.apps_changed(app_ids)

    async def on_sdk(self) -> Caller | None:
        """The caller on the SDK's connection; has the SDK imported if it is not yet."""
        self.want_sdk("a question to the user")
        return await asyncio.shield(self.sdk_caller)

    async def _ask(self, question: Question) -> Answer | None:
        caller = await self.on_sdk()
        if caller is None or caller.ask is None:
            return None
        return await caller.ask(question)

    def _answer(self, answer: dict[str, Any]) -> None:
        task = asyncio.create_task(self._writer.send_line(encoded(answer)))
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)


class _Relay:
    """An MCP server's questions during a call taken by the front, put through the SDK's connection."""

    def __init__(self, front: Front) -> None:
        self._front = front

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        return None  # the front takes no call that asked for progress

    async def elicit(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        relay = await self._sdk_relay()
        return await relay.elicit(params) if relay is not None else None

    async def sample(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        relay = await self._sdk_relay()
        return await relay.sample(params) if relay is not None else None

    async def _sdk_relay(self) -> Relay | None:
        caller = await self._front.on_sdk()
        return caller.relay if caller is not None else None

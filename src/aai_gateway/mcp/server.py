"""The MCP server: the guide model of seed 004 and the resource model of seed 003, side by side.

Guide model: `tools/list` holds one guide entry per app (`app_<appId>`, or `app:<appId>` with
`toolNames: "seed"`) plus `web_discover`, `aai_exec` and `aai_batch` (several `aai_exec` calls in one).
Resource model: `resources/list` and `resources/read` give each app's descriptor, and `tools/call`
with `<appId>:<tool>` (or its strict spelling) runs a tool directly. Both go through the same `Gateway`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult
from mcp.server.models import InitializationOptions
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from aai_gateway import __version__
from aai_gateway.consent import Answer, Ask, Question
from aai_gateway.consent.rounds import InputNeeded
from aai_gateway.errors import AaiError, AppNotFound, ToolNotFound
from aai_gateway.mcp import listings
from aai_gateway.mcp.batch_questions import ask_first
from aai_gateway.mcp.catalogue import SERVER_NAME, instructions, tool_list
from aai_gateway.mcp.errors import answer, resource_not_found, unknown_tool
from aai_gateway.mcp.forms import chosen, consent_form, form_of, takes_forms
from aai_gateway.mcp.listings import APP_TEMPLATE, DESCRIPTOR_MIME
from aai_gateway.mcp.names import APP_PREFIX, Names, Target
from aai_gateway.mcp.notify import Notifier
from aai_gateway.mcp.relay import ConnectionRelay, SessionRelay
from aai_gateway.mcp.results import ToolResult, typed
from aai_gateway.mcp.rounds import Rounds, boundary, modern
from aai_gateway.mcp.sdk_private import connection_of
from aai_gateway.mcp.tasks import Tasks
from aai_gateway.mcp.tools import Tools
from aai_gateway.mcp.wire.calls import TAKEN
from aai_gateway.mcp.wire.early import Arrived
from aai_gateway.service import Caller, Gateway

log = logging.getLogger(__name__)


ASK_TIMEOUT = 300.0
"""Seconds the user has to answer a consent question; then the call answers CONSENT_REQUIRED."""
STREAM_WAIT = 3.0
"""Seconds an HTTP client has to open its standalone stream, where consent questions travel."""


class _Server(Server[Any]):
    """The SDK server announcing list-changed notifications on every transport (HTTP builds its own options)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True, resources_changed=True),
            experimental_capabilities,
            extensions if extensions is not None else {},  # the extensions served are 2026-07-28's (discover)
        )


NOT_INITIALISED = (
    "Invalid request parameters: the session is not initialised; "
    "send initialize, then notifications/initialized, before any other request"
)


async def _before_initialize(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    """The SDK's refusal of a request sent before `initialize`, saying so (same code, which clients know)."""
    try:
        return await call_next(ctx)
    except MCPError as exc:
        connection = connection_of(ctx.session)
        if exc.error.code != types.INVALID_PARAMS or connection is None or connection.initialize_accepted:
            raise
        raise MCPError(code=types.INVALID_PARAMS, message=NOT_INITIALISED, data=ctx.method) from exc


class GatewayServer:
    """The SDK server for one Gateway, shared by every session of every transport."""

    def __init__(self, gateway: Gateway, transport: str = "stdio", tools: Tools | None = None) -> None:
        self.gateway = gateway
        self.transport = transport
        self.notifier = Notifier()
        self.tools = tools or Tools(gateway)
        self.connection: Connection | None = None
        """Over stdio, the one client's connection, once a request of it has been served."""
        self.connected = asyncio.Event()
        """Set when `connection` is."""
        self.sessions: weakref.WeakValueDictionary[str, Connection] = weakref.WeakValueDictionary()
        """Over HTTP, the connection of each session id, once a request of it has been served."""
        self._unheard = False
        """Over stdio, whether the apps changed after the client's first listing (answered before the SDK took
        over, see mcp/wire/early.py) but before its connection was seen here, so that nobody told it."""
        self.server: Server[Any] = _Server(
            SERVER_NAME,
            version=__version__,
            instructions=instructions(gateway.settings.tool_names),
            on_list_tools=self._list_tools,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_completion=self._complete,
            on_list_prompts=self._list_prompts,
            on_subscriptions_listen=self.notifier.listen,
        )
        self.server.add_request_handler("tools/call", types.CallToolRequestParams, self._call_tool)
        self.tasks = Tasks(self.server, transport)
        self.server.middleware.append(_before_initialize)
        self.server.middleware.append(boundary(SERVER_NAME))
        gateway.listeners.append(self.apps_changed)

    async def _seen(self, ctx: ServerRequestContext[Any]) -> None:
        connection = self.notifier.remember(ctx.session)
        if self.transport == "stdio" and self.connection is None:
            self.connection = connection
            self.connected.set()
            if connection is not None and self._unheard:  # told before this request's answer goes out
                self._unheard = False
                await self.notifier.lists_changed()
        elif connection is not None and connection.session_id is not None:
            self.sessions[connection.session_id] = connection

    @property
    def names(self) -> Names:
        return self.tools.names

    def initialization_options(self) -> InitializationOptions:
        return self.server.create_initialization_options()

    async def apps_changed(self, app_ids: set[str]) -> None:
        """The gateway rescanned and these apps were added, changed or removed: tell every client."""
        self.tools.forget()
        if self.transport == "stdio" and self.connection is None:
            self._unheard = True
        await self.notifier.lists_changed()
        await self.notifier.resources_updated({APP_PREFIX + app_id for app_id in app_ids})

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await self._seen(ctx)
        tools = [types.Tool.model_validate(tool) for tool in tool_list(self.gateway, self.names)]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> ToolResult | types.InputRequiredResult:
        result = await self._called(ctx, params)
        return typed(result) if isinstance(result, dict) else result

    async def _called(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> ToolResult | types.InputRequiredResult:
        await self._seen(ctx)
        style = self.gateway.settings.error_style
        target = self.names.resolve(params.name)
        if target is None:
            raise unknown_tool(self._no_such_tool(params.name), style)
        try:
            rounds = Rounds.of(ctx, params) if modern(ctx) else None
        except AaiError as exc:
            return answer(exc, style)
        caller = _caller(ctx, self.transport, rounds)
        arguments, meta = params.arguments or {}, params.meta
        if self.tasks.wanted(ctx, target.kind):  # no progress once answered: a task's client polls
            quiet = replace(caller, relay=None)

            def work(begun: Callable[[], None]) -> Awaitable[ToolResult | types.InputRequiredResult]:
                return self._answered(replace(quiet, begun=begun), target, arguments, meta, rounds)

            return await self.tasks.start(ctx, params.name, work, style)
        return await self._answered(caller, target, arguments, meta, rounds)

    async def _answered(
        self, caller: Caller, target: Target, arguments: dict[str, Any], meta: Any, rounds: Rounds | None
    ) -> ToolResult | types.InputRequiredResult:
        try:
            if rounds is not None and target.kind == "batch" and isinstance(calls := arguments.get("calls"), list):
                await ask_first(self.gateway, calls, caller, rounds.round.ask)
            return await self.tools.run(caller, target, arguments, meta)
        except AaiError as exc:
            return answer(exc, self.gateway.settings.error_style)
        except InputNeeded as needed:  # only a round's asker raises it
            assert rounds is not None
            return rounds.input_required(needed)

    def _no_such_tool(self, name: str) -> ToolNotFound:
        names = self.names
        fixed = (
            f"{names.spelling.guide_pattern()}, {names.search}, {names.install}, {names.exec}, {names.batch}, "
            f"{names.run}, {names.wait}, {names.discover}"
        )
        return ToolNotFound(
            f"no tool named '{name}'; the tools are {fixed} and {names.direct_pattern()} (see resources/list)"
        )

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        await self._seen(ctx)
        return types.ListResourcesResult.model_validate(listings.resources(self.gateway))

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult.model_validate(listings.templates())

    async def _complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        """Completes `appId` of the `app:{appId}` template; there is nothing else to complete."""
        ref, argument = params.ref, params.argument
        values: list[str] = []
        if getattr(ref, "uri", None) == APP_TEMPLATE and argument.name == "appId":
            values = sorted(a.app_id for a in self.gateway.apps() if a.app_id.startswith(argument.value))
        return types.CompleteResult(
            completion=types.Completion(values=values[:100], total=len(values), has_more=len(values) > 100)
        )

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult.model_validate(listings.prompts())

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self.notifier.subscribe(ctx.session, str(params.uri))
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.notifier.unsubscribe(ctx.session, str(params.uri))
        return types.EmptyResult()

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        await self._seen(ctx)
        uri = str(params.uri)
        style = self.gateway.settings.error_style
        if not uri.startswith(APP_PREFIX):
            missing = AppNotFound(f"no resource '{uri}'; resources are app:<appId> (see resources/list)")
            raise resource_not_found(missing, uri, style)
        try:
            app = self.gateway.app(uri[len(APP_PREFIX) :])
        except AaiError as exc:
            raise resource_not_found(exc, uri, style) from None
        text = json.dumps(app.document, ensure_ascii=False, indent=2)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=DESCRIPTOR_MIME, text=text)]
        )


def _caller(ctx: ServerRequestContext[Any], transport: str, rounds: Rounds | None = None) -> Caller:
    """The caller of a request; a 2026-07-28 client is asked between rounds (`rounds`) or, without forms, not."""
    arrived = ctx.request.at if isinstance(ctx.request, Arrived) else None
    name = client_name(ctx.session.client_params)
    ask = (rounds.round.ask if rounds is not None else None) if modern(ctx) else _asker(ctx)
    return Caller(name=name, transport=transport, ask=ask, arrived=arrived, relay=SessionRelay(ctx))


class Connected:
    """A stdio session as the SDK's connection has it, for the fast path (`wire.calls.Session`)."""

    kinds = TAKEN

    def __init__(self, server: GatewayServer) -> None:
        self.tools = server.tools
        self._server = server
        self._caller: tuple[Connection, Caller] | None = None

    @property
    def version(self) -> str | None:
        connection = self._server.connection
        return connection.protocol_version if connection is not None else None

    def caller(self) -> Caller | None:
        """The caller of the connection, once `ready_caller` has one (kept: a ready connection stays ready)."""
        connection = self._server.connection
        if self._caller is not None and self._caller[0] is connection:
            return self._caller[1]
        caller = ready_caller(connection, "stdio")
        if caller is not None and connection is not None:
            self._caller = (connection, caller)
        return caller


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


def client_name(params: types.InitializeRequestParams | None) -> str:
    """The caller's name, as consent and the history know it: the client's `clientInfo.name`."""
    return params.client_info.name if params is not None else "unknown"


def _asker(ctx: ServerRequestContext[Any]) -> Ask | None:
    """Consent questions as form elicitations, for clients that declared the capability.

    On the request's own stream where it has one (stdio, SSE), else on the session's standalone stream
    (HTTP with JSON responses). No answer, an error or a dismissed form is None: CONSENT_REQUIRED.
    """
    session = ctx.session
    related = ctx.request_id if session.can_send_request else None

    def elicit(question: Question) -> Awaitable[types.ElicitResult]:
        form = consent_form(question.titles())
        return session.elicit_form(question.message(), form, related_request_id=related)

    return _form_asker(session.client_capabilities, elicit, session.send_ping if related is None else None)


def asker_on(connection: Connection, standalone: bool = False) -> Ask | None:
    """`_asker` for a call served outside the SDK's request handling: on the connection's own back channel
    (stdio), or with `standalone` on the session's standalone stream (HTTP with JSON responses)."""
    params = connection.client_params

    def elicit(question: Question) -> Awaitable[types.ElicitResult]:
        return connection.send_request(types.ElicitRequest(params=form_of(question)))

    capabilities = params.capabilities if params is not None else None
    return _form_asker(capabilities, elicit, connection.ping if standalone else None)


def _form_asker(
    capabilities: types.ClientCapabilities | None,
    elicit: Callable[[Question], Awaitable[types.ElicitResult]],
    ping: Callable[[], Awaitable[object]] | None,
) -> Ask | None:
    """Questions put with `elicit`, to a client that takes form elicitations; with `ping`, only once the
    standalone stream they travel on is open."""
    if not takes_forms(capabilities):
        return None

    async def ask(question: Question) -> Answer | None:
        if ping is not None and not await _standalone_stream(ping):
            log.info(
                "could not ask about %s:%s: the client has no open stream for requests", question.app, question.tool
            )
            return None
        return await _asked(question, elicit(question))

    return ask


async def _asked(question: Question, asking: Awaitable[types.ElicitResult]) -> Answer | None:
    """The user's answer to a consent form; None when there is none (an error, a timeout, a dismissed form)."""
    try:
        with anyio.fail_after(ASK_TIMEOUT):
            result = await asking
    except (MCPError, ValidationError, TimeoutError) as exc:
        log.info("could not ask about %s:%s: %s", question.app, question.tool, exc)
        return None
    return chosen(result)


async def _standalone_stream(ping: Callable[[], Awaitable[object]]) -> bool:
    """Whether the session's standalone stream is open: a request sent before it is would be lost, so ping
    until one is answered (a ping sent too early is dropped and never answered, and is harmless)."""
    with anyio.move_on_after(STREAM_WAIT):
        while True:
            with anyio.move_on_after(0.25):
                try:
                    await ping()
                except MCPError:
                    return False
                return True
    return False

"""MCP servers served as apps: each call forwarded to the server's `tools/call`.

The server's session lives in `aai_gateway.mcp_client`; this executor keeps one `Server` per app,
replaced when the app's descriptor changes, and lists the app's tools from the server (`live_tools`). A result
is checked against the tool's output schema here (linear-time regexes, bounded in time), not by the SDK.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Set

from aai_gateway.config import Settings
from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.descriptor.argument_check import result_problem
from aai_gateway.descriptor.model import Event
from aai_gateway.descriptor.server_events import with_server_events
from aai_gateway.errors import AaiError, AutomationFailed
from aai_gateway.executors.base import Approve, Forwarded, ToolCall
from aai_gateway.executors.mcp_launch import launch_of
from aai_gateway.executors.mcp_tools import SERVER_NAME, gateway_tools
from aai_gateway.mcp_client import Listener, Server, ServerStatus

log = logging.getLogger("aai_gateway.executors.mcp")


class McpExecutor:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._servers: dict[str, tuple[str, Server]] = {}
        self._lock = asyncio.Lock()
        self.tools_changed: Callable[[str], None] | None = None
        """Told the app id whenever a server says its tool list changed."""
        self.approve: Approve | None = None
        """Awaited before every use of a server, so that none starts (for a guide, a call or anything else)
        without the user's yes to its command line; a revoked approval stops the next use."""

    async def _server(self, app: Descriptor, binding: Binding) -> Server:
        if self.approve is not None:
            try:
                await self.approve(app, binding)  # outside the lock: it may wait for the user's answer
            except AaiError:
                await self._stop(app.app_id)  # one started under an approval since withdrawn, or an older line
                raise
        fingerprint = json.dumps([binding.options, binding.auth], sort_keys=True, default=str)
        async with self._lock:
            known = self._servers.get(app.app_id)
            if known is not None and known[0] == fingerprint:
                return known[1]
            if known is not None:
                log.info("%s: the descriptor changed; stopping the server started from the old one", app.app_id)
                await known[1].aclose()
            server = Server(await launch_of(app, binding, self.settings), self._changed)
            self._servers[app.app_id] = (fingerprint, server)
            return server

    async def _stop(self, app_id: str) -> None:
        async with self._lock:
            known = self._servers.pop(app_id, None)
        if known is not None:
            log.info("%s: its command line is not approved (any more); stopping its server", app_id)
            await known[1].aclose()

    def _changed(self, app_id: str) -> None:
        if self.tools_changed is not None:
            self.tools_changed(app_id)

    async def live_tools(self, app: Descriptor, binding: Binding, timeout: float) -> tuple[Tool, ...]:
        server = await self._server(app, binding)
        listed = await server.tools(timeout)
        overrides = binding.options.get("overrides") or ()
        # hundreds of schemas to check: in a thread, so the event loop keeps answering meanwhile
        tools, problems = await asyncio.to_thread(gateway_tools, app.app_id, listed, overrides)
        server.tool_problems = problems
        return tools

    def live_events(self, app: Descriptor) -> tuple[Event, ...]:
        known = self._servers.get(app.app_id)
        return with_server_events(app.events, known[1].capabilities if known is not None else {})

    async def listen(self, app: Descriptor, binding: Binding, listener: Listener, timeout: float) -> Server:
        """The app's server, started if need be, with `listener` hearing its notifications."""
        server = await self._server(app, binding)
        await server.listen(listener, timeout)
        return server

    async def execute(self, call: ToolCall) -> Forwarded:
        server = await self._server(call.app, call.binding)
        name = call.tool.options.get(SERVER_NAME, call.tool.name)
        result = await server.call(name, call.args, call.timeout, call.relay)
        if call.tool.returns is not None and (problem := result_problem(call.tool.returns, result)) is not None:
            raise AutomationFailed(f"{call.app.app_id}: {call.tool.name} answered against its output schema: {problem}")
        return Forwarded(result)

    async def retain(self, app_ids: Set[str]) -> None:
        async with self._lock:
            gone = [app_id for app_id in self._servers if app_id not in app_ids]
            stopping = [self._servers.pop(app_id)[1] for app_id in gone]
        for app_id in gone:
            log.info("%s: no longer served; stopping its server", app_id)
        await asyncio.gather(*(s.aclose() for s in stopping), return_exceptions=True)

    def statuses(self) -> list[ServerStatus]:
        return [server.status() for _, server in self._servers.values()]

    async def aclose(self) -> None:
        servers = [server for _, server in self._servers.values()]
        self._servers = {}
        await asyncio.gather(*(s.aclose() for s in servers), return_exceptions=True)

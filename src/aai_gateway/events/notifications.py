"""An MCP server's own notifications as events: its logging messages, resource updates and list changes.

The source listens on the one session the gateway keeps to the server (started if need be, and kept
from idling out while somebody listens); each notification's params are the payload. A resource update
counts only for the resources subscribed to: the event's `uri`, else the ones the waiter's filter names
(`uri == '...'`); the gateway sends `resources/subscribe` when it starts listening and
`resources/unsubscribe` when nobody listens any more. When the server ends, the waiters are told so.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aai_gateway import expressions
from aai_gateway.calls import Caller, Calls
from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.model import Event
from aai_gateway.descriptor.server_events import UPDATED, severity
from aai_gateway.errors import AaiError, AppNotRunning, AutomationNotSupported, InvalidParams
from aai_gateway.events.source import Source

if TYPE_CHECKING:
    from aai_gateway.events.hub import Fanout
    from aai_gateway.mcp_client import Listener, Server

log = logging.getLogger(__name__)

MAX_URIS = 20
"""Resources one filter may name (and one source subscribe to)."""


def named_uris(filter: str) -> set[str] | None:
    """The resources a filter keeps (`uri == 'a'`, `'a' == uri`, joined by `&&` or `||`); None when it may
    keep an update of any resource (it names none, or one side of an `||` names none)."""
    return _uris(expressions.compiled(filter, "filter").parsed)


def _uris(node: Mapping[str, Any], depth: int = 0) -> set[str] | None:
    kind, children = node.get("type"), node.get("children") or []
    if depth > 32 or len(children) != 2:
        return None
    if kind == "comparator" and node.get("value") == "eq":
        sides = {child.get("type"): child.get("value") for child in children}
        value = sides.get("literal")
        return {value} if sides.get("field") == "uri" and isinstance(value, str) else None
    left, right = (_uris(child, depth + 1) for child in children)
    if kind == "and_expression":
        return left if right is None else right if left is None else left & right
    if kind == "or_expression":
        return None if left is None or right is None else left | right
    return None


class NotificationSource(Source):
    def __init__(self, calls: Calls, app: Descriptor, event: Event, fanout: Fanout, caller: Caller) -> None:
        super().__init__(calls, app, event, fanout, caller)
        source = event.source
        self.method = str(source.get("notification"))
        uris = source.get("uris") or ([source["uri"]] if source.get("uri") else [])
        self.uris = tuple(str(u) for u in uris)
        self.least = severity(source["level"]) if source.get("level") else 0
        self._server: Server | None = None
        self._listener: Listener | None = None
        self._over = False
        """The server's session ended: nothing to unsubscribe from."""

    @classmethod
    def bound(cls, app: Descriptor, event: Event, filter: str | None) -> Event:
        """A resource update without a `uri` of its own: the event for the resources the filter names."""
        if event.source.get("notification") != UPDATED or event.source.get("uri"):
            return event
        uris = named_uris(filter) if filter else None
        if not uris or len(uris) > MAX_URIS:
            raise InvalidParams(
                f"{app.app_id}'s event {event.name} comes only for resources the gateway subscribes to: give a "
                f"filter naming {'at most ' + str(MAX_URIS) if uris else 'the one you mean'}, such as "
                "uri == 'file:///path' (the server's resources list their uri)"
            )
        return replace(event, source={**event.source, "uris": sorted(uris)})

    def _timeout(self) -> float:
        settings = self.calls.settings
        own = settings.apps.get(self.app.app_id)
        return (own.timeout if own else None) or settings.default_timeout

    async def start(self) -> None:
        binding = self.app.mcp
        if binding is None:
            raise AutomationNotSupported(
                f"{self.app.app_id} is no MCP server, so its event {self.event.name} is unheard"
            )
        # the MCP client (and the SDK under it) is loaded by the first use of a server, not by importing this
        from aai_gateway.executors.mcp import McpExecutor  # noqa: PLC0415
        from aai_gateway.mcp_client import Listener  # noqa: PLC0415

        executor = self.calls.servers.executor(binding)
        assert isinstance(executor, McpExecutor)
        self._listener = Listener(self._heard, self._ended)
        self._server = await executor.listen(self.app, binding, self._listener, self._timeout())
        try:
            for uri in self.uris:
                await self._server.subscribe(uri, self._timeout())
        except BaseException:
            await self.stop()
            raise
        subscribed = f", subscribed to {', '.join(self.uris)}" if self.uris else ""
        log.info("listening for %s of %s (%s%s)", self.event.name, self.app.app_id, self.method, subscribed)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        if self._listener is not None:
            server.unlisten(self._listener)
        for uri in () if self._over else self.uris:
            try:
                await server.unsubscribe(uri, self._timeout())
            except AaiError as exc:
                log.info("%s: could not unsubscribe from %s: %s", self.app.app_id, uri, exc.detail)
        log.info("stopped listening for %s of %s", self.event.name, self.app.app_id)

    def _heard(self, method: str, params: Mapping[str, Any]) -> None:
        if method != self.method or self._over:
            return
        if self.uris and params.get("uri") not in self.uris:
            return
        if self.least and severity(params.get("level")) < self.least:
            return
        if self.when is not None:
            try:
                if not self.when.search(params):
                    return
            except Exception as exc:
                log.debug("when of %s failed: %s", self.event.name, exc)
                return
        self.fanout.deliver(params)

    def _ended(self, why: str) -> None:
        self._over = True
        self.fanout.fail(
            AppNotRunning(
                f"{self.app.app_id} ended while its event {self.event.name} was listened for: the server {why}; "
                "it is started again on the next call or wait"
            )
        )

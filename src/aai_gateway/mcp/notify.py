"""Telling connected clients that the tool and resource lists changed.

Clients of the handshake era get `notifications/tools/list_changed` and
`notifications/resources/list_changed` on their session; clients of the 2026-07-28 era receive the
same events on their `subscriptions/listen` stream, served from one in-process bus.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from mcp.server.connection import Connection
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from aai_gateway.mcp.sdk_private import connection_of

log = logging.getLogger(__name__)


class Notifier:
    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._subscriptions: weakref.WeakKeyDictionary[Connection, set[str]] = weakref.WeakKeyDictionary()

    def remember(self, session: Any) -> Connection | None:
        """Note the connection behind a request's session, so that it hears of later changes; return it."""
        connection = connection_of(session)
        if connection is not None:
            self._connections.add(connection)
        return connection

    def subscribe(self, session: Any, uri: str) -> None:
        connection = connection_of(session)
        if connection is not None:
            self._subscriptions.setdefault(connection, set()).add(uri)

    def unsubscribe(self, session: Any, uri: str) -> None:
        connection = connection_of(session)
        if connection is not None:
            self._subscriptions.get(connection, set()).discard(uri)

    async def resources_updated(self, uris: set[str]) -> None:
        """`notifications/resources/updated` for each changed resource a client subscribed to."""
        for uri in sorted(uris):
            await self.bus.publish(ResourceUpdated(uri=uri))
        for connection, subscribed in list(self._subscriptions.items()):
            for uri in sorted(subscribed & uris):
                try:
                    await connection.send_resource_updated(uri)
                except Exception as exc:  # a client that went away must not stop the others hearing
                    log.debug("dropping a subscription that cannot be notified: %s", exc)
                    self._subscriptions.pop(connection, None)
                    break

    async def lists_changed(self) -> None:
        """Tell every client its lists changed: each connection first, before anything else yields, so that no
        answer already showing the new lists reaches a client ahead of the notice that they changed."""
        for connection in list(self._connections):
            if connection.protocol_version in MODERN_PROTOCOL_VERSIONS or not connection.has_standalone_channel:
                continue  # the modern era hears through subscriptions/listen (the bus below)
            try:
                await connection.send_tool_list_changed()
                await connection.send_resource_list_changed()
            except Exception as exc:  # a client that went away must not stop the others hearing
                log.debug("dropping a connection that cannot be notified: %s", exc)
                self._connections.discard(connection)
        await self.bus.publish(ToolsListChanged())
        await self.bus.publish(ResourcesListChanged())

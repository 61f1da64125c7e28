"""An MCP server's own notifications as events (source kind `mcp`), and the events a server's declared
capabilities give its app when nobody wrote them.

`"mcp": {"notification": "notifications/resources/updated", "uri"?: "..."}`: the payload is the
notification's params. Resource updates come only for resources subscribed to (`resources/subscribe`):
the event's `uri`, else the ones the waiter's filter names (`uri == 'file:///notes.md'`). Logging
messages may be kept from a `level` up. Progress is no event: it belongs to the call it reports on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aai_gateway.descriptor.model import Event

UPDATED = "notifications/resources/updated"
MESSAGE = "notifications/message"
NOTIFICATIONS: dict[str, str] = {
    UPDATED: "the notification's params: {uri} of the resource that changed (read it again to see how)",
    "notifications/resources/list_changed": "{} (the list of resources changed; list them again)",
    "notifications/tools/list_changed": "{} (the server's tools changed; the app's guide shows the new ones)",
    "notifications/prompts/list_changed": "{} (the list of prompts changed)",
    MESSAGE: "the notification's params: {level, logger?, data}, data being what the server logged",
}
"""The notifications an `mcp` event may name, and what its payload holds (for the guide)."""
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""Logging levels of MCP (RFC 5424's), least severe first."""


def _flag(capabilities: Mapping[str, Any], group: str, flag: str | None = None) -> bool:
    value = capabilities.get(group)
    if not isinstance(value, Mapping):
        return False
    return flag is None or value.get(flag) is True


def server_events(capabilities: Mapping[str, Any]) -> tuple[Event, ...]:
    """The events an MCP server's `capabilities` (as its `initialize` declared them) give its app."""
    found = []
    offered = (
        (
            "resource_updated",
            "A resource of the server changed. Name it in the filter, as uri == 'file:///path': the gateway "
            "subscribes to it while somebody waits.",
            UPDATED,
            _flag(capabilities, "resources", "subscribe"),
        ),
        (
            "resources_changed",
            "The server's list of resources changed.",
            "notifications/resources/list_changed",
            _flag(capabilities, "resources", "listChanged"),
        ),
        (
            "tools_changed",
            "The server's tools changed.",
            "notifications/tools/list_changed",
            _flag(capabilities, "tools", "listChanged"),
        ),
        (
            "prompts_changed",
            "The server's list of prompts changed.",
            "notifications/prompts/list_changed",
            _flag(capabilities, "prompts", "listChanged"),
        ),
        (
            "log_message",
            "The server logged a message (filter by level, e.g. level == 'error').",
            MESSAGE,
            _flag(capabilities, "logging"),
        ),
    )
    for name, description, notification, offers in offered:
        if offers:
            found.append(Event(name, description, "mcp", {"notification": notification}))
    return tuple(found)


def with_server_events(declared: tuple[Event, ...], capabilities: Mapping[str, Any]) -> tuple[Event, ...]:
    """The events a descriptor declares, then the server's own whose names it does not use."""
    taken = {e.name for e in declared}
    return declared + tuple(e for e in server_events(capabilities) if e.name not in taken)


def severity(level: Any) -> int:
    """How severe a logging level is (0 for debug); an unknown one counts as the most severe, so it is kept."""
    return LEVELS.index(level) if level in LEVELS else len(LEVELS)

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


OFFERED = (
    (
        "resource_updated",
        UPDATED,
        ("resources", "subscribe"),
        "A resource of the server changed. Name it in the filter, as uri == 'file:///path': the gateway "
        "subscribes to it while somebody waits.",
    ),
    (
        "resources_changed",
        "notifications/resources/list_changed",
        ("resources", "listChanged"),
        "The server's list of resources changed.",
    ),
    ("tools_changed", "notifications/tools/list_changed", ("tools", "listChanged"), "The server's tools changed."),
    (
        "prompts_changed",
        "notifications/prompts/list_changed",
        ("prompts", "listChanged"),
        "The server's list of prompts changed.",
    ),
    (
        "log_message",
        MESSAGE,
        ("logging", None),
        "The server logged a message (filter by level, e.g. level == 'error').",
    ),
)
"""The events a server's capabilities give its app: name, notification, the capability (and its flag) that
offers it, description."""


def server_events(capabilities: Mapping[str, Any]) -> tuple[Event, ...]:
    """The events an MCP server's `capabilities` (as its `initialize` declared them) give its app."""
    found = []
    for name, notification, (group, flag), description in OFFERED:
        offered = capabilities.get(group)
        if isinstance(offered, Mapping) and (flag is None or offered.get(flag) is True):
            found.append(Event(name, description, "mcp", {"notification": notification}))
    return tuple(found)


def with_server_events(declared: tuple[Event, ...], capabilities: Mapping[str, Any]) -> tuple[Event, ...]:
    """The events a descriptor declares, then the server's own whose names it does not use."""
    taken = {e.name for e in declared}
    return declared + tuple(e for e in server_events(capabilities) if e.name not in taken)


def severity(level: Any) -> int:
    """How severe a logging level is (0 for debug); an unknown one counts as the most severe, so it is kept."""
    return LEVELS.index(level) if level in LEVELS else len(LEVELS)

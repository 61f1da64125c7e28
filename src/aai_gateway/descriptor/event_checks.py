"""Checks of a descriptor's `events` a schema cannot say, each a problem at a JSON pointer.

Names are unique; a poll's tool is a tool of the app (a warning when it is not marked read-only, since
it runs again and again unasked); `when` parses as a JMESPath query and `payload`'s `${…}` queries too;
a signal's interface and member are DBus names and its `fields` name each argument once; an MCP
notification belongs to an MCP server's app, and only a resource update has a `uri`, only a logging
message a `level`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aai_gateway import expressions
from aai_gateway.descriptor.server_events import MESSAGE, UPDATED
from aai_gateway.problems import Problem, pointer

Path = list[str | int]

INTERFACE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
MEMBER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
OBJECT = re.compile(r"/|(/[A-Za-z0-9_]+)+")


def event_problems(
    events: Any, tools: Iterable[Any], source: str, *, tools_known: bool = True, mcp_server: bool = False
) -> list[Problem]:
    """Problems of a document's `events` list; `tools` are the app's raw tools (every binding's), which a poll
    may call; `tools_known` is False where an MCP server lists the tools (then any name may be one);
    `mcp_server` says whether the app is an MCP server (whose notifications an `mcp` event hears)."""
    if not isinstance(events, list):
        return []
    by_name = {t["name"]: t for t in tools if isinstance(t, Mapping) and isinstance(t.get("name"), str)}
    found: list[Problem] = []
    seen: dict[str, int] = {}
    for index, event in enumerate(events):
        at: Path = ["events", index]
        if not isinstance(event, Mapping):
            continue
        name = event.get("name")
        if isinstance(name, str):
            if name in seen:
                found.append(
                    Problem(
                        source, pointer([*at, "name"]), f"event name '{name}' is already used by event {seen[name]}"
                    )
                )
            seen.setdefault(name, index)
        found += _query_problems(event, at, source)
        if isinstance(event.get("dbus"), Mapping):
            found += _signal_problems(event["dbus"], [*at, "dbus"], source)
        if isinstance(event.get("poll"), Mapping) and tools_known:
            found += _poll_problems(event["poll"], by_name, [*at, "poll"], source)
        if isinstance(event.get("mcp"), Mapping):
            found += _notification_problems(event["mcp"], [*at, "mcp"], source, mcp_server=mcp_server)
    return found


def _notification_problems(
    notification: Mapping[str, Any], at: Path, source: str, *, mcp_server: bool
) -> list[Problem]:
    if not mcp_server:
        why = "an mcp event hears an MCP server's notifications, and this app is no MCP server (execution type mcp)"
        return [Problem(source, pointer(at), why)]
    method = notification.get("notification")
    found = []
    if "uri" in notification and method != UPDATED:
        found.append(Problem(source, pointer([*at, "uri"]), f"only {UPDATED} concerns one resource, not {method}"))
    if "level" in notification and method != MESSAGE:
        found.append(Problem(source, pointer([*at, "level"]), f"only {MESSAGE} has a level, not {method}"))
    return found


def _query_problems(event: Mapping[str, Any], at: Path, source: str) -> list[Problem]:
    found = []
    when = event.get("when")
    if isinstance(when, str):
        try:
            expressions.compiled(when, "")
        except expressions.ExpressionError as exc:
            found.append(Problem(source, pointer([*at, "when"]), str(exc).removeprefix(": ")))
    if "payload" in event:
        try:
            list(expressions.check(event["payload"], ""))
        except expressions.ExpressionError as exc:
            found.append(Problem(source, pointer([*at, "payload"]), str(exc).removeprefix(": ").lstrip(".")))
    return found


def _signal_problems(signal: Mapping[str, Any], at: Path, source: str) -> list[Problem]:
    found = []
    checks = (
        ("interface", INTERFACE, "a DBus interface name such as org.mpris.MediaPlayer2.Player"),
        ("member", MEMBER, "a DBus signal name such as PropertiesChanged"),
        ("object", OBJECT, "a DBus object path such as /org/mpris/MediaPlayer2"),
    )
    for key, pattern, what in checks:
        value = signal.get(key)
        if isinstance(value, str) and (len(value) > 255 or not pattern.fullmatch(value)):
            found.append(Problem(source, pointer([*at, key]), f"{value[:80]!r} is not {what}"))
    fields = signal.get("fields")
    if isinstance(fields, list):
        found += _repeated(fields, [*at, "fields"], source)
    return found


def _repeated(fields: Sequence[Any], at: Path, source: str) -> list[Problem]:
    seen: set[Any] = set()
    found = []
    for index, field in enumerate(fields):
        if isinstance(field, str) and field in seen:
            found.append(Problem(source, pointer([*at, index]), f"field '{field}' is named twice"))
        seen.add(field)
    return found


def _poll_problems(poll: Mapping[str, Any], tools: Mapping[str, Any], at: Path, source: str) -> list[Problem]:
    name = poll.get("tool")
    tool = tools.get(name) if isinstance(name, str) else None
    if tool is None:
        listed = ", ".join(sorted(tools)) or "none"
        return [Problem(source, pointer([*at, "tool"]), f"'{name}' is not a tool of this app; its tools are: {listed}")]
    hints = tool.get("annotations")
    if not (isinstance(hints, Mapping) and hints.get("readOnlyHint") is True):
        message = f"'{name}' is not marked read-only (readOnlyHint); a poll calls it again and again unasked"
        return [Problem(source, pointer([*at, "tool"]), message, "warning")]
    return []

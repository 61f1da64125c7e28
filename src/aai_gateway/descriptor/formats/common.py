"""Pieces the shape adapters share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aai_gateway.descriptor.model import Annotations, Event, Name, Tool, Undo

TOOL_FIELDS = frozenset({"name", "description", "aliases", "parameters", "returns", "timeout", "annotations", "undo"})

ENVELOPE = {"linux": "ipc", "macos": "apple-events", "windows": "com-ipc"}
"""Shapes B and C send one JSON envelope per call; what carries it depends on the platform."""


def pipe_names(text: str) -> tuple[Name, ...]:
    """ "Reminders|提醒事项|Rappels" → three names, the first the primary one."""
    return tuple(Name(part.strip()) for part in text.split("|") if part.strip())


def make_tool(raw: Mapping[str, Any], extra: Mapping[str, Any] | None = None, *, timeout_scale: float = 1.0) -> Tool:
    """A tool from its raw fields; `extra` (a tool's own execution block) joins its options."""
    options = {k: v for k, v in raw.items() if k not in TOOL_FIELDS}
    options.update(extra or {})
    timeout = raw.get("timeout")
    return Tool(
        name=raw["name"],
        description=raw.get("description", ""),
        parameters=raw.get("parameters") or {"type": "object", "properties": {}},
        returns=raw.get("returns"),
        timeout=None if timeout is None else float(timeout) * timeout_scale,
        options=options,
        annotations=Annotations.from_json(raw.get("annotations")),
        aliases=tuple(raw.get("aliases", ())),
        undo=Undo.from_json(raw.get("undo")),
    )


def events_of(doc: Mapping[str, Any]) -> tuple[Event, ...]:
    """The document's `events` (the same in every shape)."""
    return tuple(Event.from_json(raw) for raw in doc.get("events") or ())

"""Shape C: shape B with camelCase keys, names by language tag, and named execution types.

Accepted tolerantly: snake_case spellings of the same keys are taken too, and a tool's schema may
be called `parameters` or `inputSchema`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aai_gateway.descriptor.formats.common import ENVELOPE, make_tool, pipe_names
from aai_gateway.descriptor.formats.single import build
from aai_gateway.descriptor.model import Descriptor, Name, Tool

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")

EXECUTION_TYPES = {"http": "http", "dbus": "dbus", "com": "com-ipc", "apple-events": "apple-events", "mcp": "mcp"}
"""C's named execution types; `ipc` means the platform's envelope (see `ENVELOPE`)."""

RENAMED = {"object_path": "object", "input_schema": "parameters"}


def snake(key: str) -> str:
    key = _CAMEL.sub(r"_\1", key).lower()
    return RENAMED.get(key, key)


def snake_keys(value: Mapping[str, Any]) -> dict[str, Any]:
    return {snake(k): v for k, v in value.items()}


def names_of(app: Mapping[str, Any]) -> tuple[Name, ...]:
    raw = app["name"]
    if isinstance(raw, str):
        return pipe_names(raw)
    default = app.get("defaultLang") or app.get("default_lang")
    ordered = sorted(raw.items(), key=lambda item: item[0] != default)
    return tuple(Name(text, lang) for lang, text in ordered)


def tool_from(raw: Mapping[str, Any]) -> Tool:
    execution = snake_keys(raw.get("execution") or {})
    rest = snake_keys({k: v for k, v in raw.items() if k != "execution"})
    return make_tool(rest, execution)


def automation_for(platform: str, execution_type: str | None) -> str:
    if execution_type in EXECUTION_TYPES:
        return EXECUTION_TYPES[execution_type]
    return "http" if platform == "web" else ENVELOPE.get(platform, "ipc")


def normalise(doc: Mapping[str, Any], source: str = "") -> Descriptor:
    execution = snake_keys(doc.get("execution") or {})
    auth = doc.get("auth")
    if isinstance(auth, Mapping):
        auth = {snake(k): (snake_keys(v) if isinstance(v, Mapping) else v) for k, v in auth.items()}
    return build(
        doc,
        names=names_of(doc["app"]),
        execution=execution,
        auth=auth,
        tools=tuple(tool_from(t) for t in doc.get("tools") or ()),
        automation=automation_for(doc["platform"], execution.get("type")),
        shape="camel",
        source=source,
    )

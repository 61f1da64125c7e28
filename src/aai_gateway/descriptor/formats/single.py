"""Shape B: one platform per file, `app` metadata and `execution` (seed 001)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aai_gateway.descriptor.formats.common import ENVELOPE, events_of, make_tool, pipe_names
from aai_gateway.descriptor.model import Binding, Descriptor, Name, Tool


def automation_for(platform: str, execution_type: str | None) -> str:
    """B names `ipc`, `http` or `mcp`; the model names what actually runs."""
    if execution_type == "mcp":
        return "mcp"
    if platform == "web" or execution_type == "http":
        return "http"
    return ENVELOPE.get(platform, "ipc")


def tool_from(raw: Mapping[str, Any]) -> Tool:
    """A tool's own `execution` block (path, method, headers) is flattened into its options."""
    execution = raw.get("execution") or {}
    rest = {k: v for k, v in raw.items() if k != "execution"}
    return make_tool(rest, execution)


def build(
    doc: Mapping[str, Any],
    *,
    names: tuple[Name, ...],
    execution: Mapping[str, Any],
    auth: Mapping[str, Any] | None,
    tools: tuple[Tool, ...],
    automation: str,
    shape: str,
    source: str,
) -> Descriptor:
    app = doc["app"]
    platform = doc["platform"]
    options = {k: v for k, v in execution.items() if k != "type"}
    if automation == "mcp":  # the server lists its tools; the descriptor's only adjust them
        options["overrides"] = list(doc.get("tools") or ())
        tools = ()
    binding = Binding(platform=platform, automation=automation, tools=tools, options=options, auth=auth)
    return Descriptor(
        app_id=app["id"],
        names=names,
        description=app.get("description", ""),
        bindings={platform: binding},
        shape="camel" if shape == "camel" else "single",
        aliases=tuple(app.get("aliases", ())),
        version=doc.get("version"),
        source=source,
        events=events_of(doc),
        document=doc,
    )


def normalise(doc: Mapping[str, Any], source: str = "") -> Descriptor:
    execution = doc.get("execution") or {}
    return build(
        doc,
        names=pipe_names(doc["app"]["name"]),
        execution=execution,
        auth=doc.get("auth"),
        tools=tuple(tool_from(t) for t in doc.get("tools") or ()),
        automation=automation_for(doc["platform"], execution.get("type")),
        shape="single",
        source=source,
    )

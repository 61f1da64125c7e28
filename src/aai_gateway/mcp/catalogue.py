"""What `initialize` and `tools/list` answer, in wire form, without the MCP SDK.

The SDK server builds its listing from these, and the stdio transport answers a session's first
requests from them while the SDK is still being imported (see `early.py`).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from aai_gateway.descriptor.guide import catalogue_entry
from aai_gateway.events.schema import MAX_TIMEOUT as MAX_WAIT
from aai_gateway.events.schema import OUTPUT_SCHEMA as WAIT_OUTPUT_SCHEMA
from aai_gateway.json_shapes import ANY_JSON, ERROR_SCHEMA
from aai_gateway.mcp.names import Names
from aai_gateway.search.schema import OUTPUT_SCHEMA as SEARCH_OUTPUT_SCHEMA
from aai_gateway.service import Gateway
from aai_gateway.spelling import spelling
from aai_gateway.workflows.schema import MAX_BATCH, MAX_ITEMS, MAX_STEPS
from aai_gateway.workflows.schema import OUTPUT_SCHEMA as RUN_OUTPUT_SCHEMA

SERVER_NAME = "aai-gateway"
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

DISCOVER_DESCRIPTION = "Discover web app guide. Use when user mentions a web service. Supports URL/domain/name."
DISCOVER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"url": {"type": "string", "description": "Web app URL, domain, or name"}},
    "required": ["url"],
}
SEARCH_DESCRIPTION = (
    "Find the app operation for a task, in any language: searches installed apps, MCP servers, the library "
    "and stores. Parameters: query, limit (5, at most 25). Each hit gives app, tool and args to run it."
)
SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What the user wants done, in their words"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 25, "default": 5, "description": "Most hits"},
    },
    "required": ["query"],
}
INSTALL_DESCRIPTION = (
    "Install an app that search found in the library or a store, once the user agrees. "
    "Parameters: app (its id). Returns the app's guide, so its operations can run at once."
)
INSTALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"app": {"type": "string", "description": "The entry's app id, as search gives it"}},
    "required": ["app"],
}
EXEC_DESCRIPTION = "Execute app operation. Parameters: app, tool, args. Use after reading guide."
EXEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "app": {"type": "string", "description": "App ID or URL"},
        "tool": {"type": "string", "description": "Operation name"},
        "args": {"type": "object", "description": "Parameters"},
    },
    "required": ["app", "tool"],
}
BATCH_DESCRIPTION = (
    f"Run several app operations in one call, in parallel by default. Parameters: calls [{{app, tool, args}}] "
    f"(1 to {MAX_BATCH}), parallel, stopOnError. Results in order, each with its status."
)

RUN_DESCRIPTION = (
    "Run app operations as one plan. steps: [{id, app, tool, args, if?, forEach?, undo?}]; args may read "
    "${steps.<id>.result.<field>} (JMESPath). Independent steps run in parallel; on a failure, done steps are "
    "undone (onError: rollback|stop|continue). output: what to answer."
)
RUN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_STEPS,
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "app": {"type": "string"},
                    "tool": {"type": "string"},
                    "args": {"type": "object"},
                    "if": {"type": "string"},
                    "forEach": {"anyOf": [{"type": "string"}, {"type": "array", "maxItems": MAX_ITEMS}]},
                    "undo": {"type": "object"},
                    "timeout": {"type": "number"},
                    "retries": {"type": "integer"},
                },
                "required": ["id", "app", "tool"],
            },
        },
        "output": ANY_JSON,
        "onError": {"enum": ["rollback", "stop", "continue"]},
        "inputs": {"type": "object"},
        "timeout": {"type": "number"},
    },
    "required": ["steps"],
}

WAIT_DESCRIPTION = (
    "Wait for an app's event (its guide lists them), e.g. a track change. Parameters: app, event, filter "
    f"(JMESPath over the payload), timeout (seconds, ≤ {MAX_WAIT}). Returns the first match, or says none came."
)
WAIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "app": {"type": "string"},
        "event": {"type": "string"},
        "filter": {"type": "string"},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_WAIT},
    },
    "required": ["app", "event", "timeout"],
}


@cache
def instructions(style: str) -> str:
    """What `initialize` tells the client, naming the tools as they are listed."""
    names = spelling(style)
    return (
        f"Find the operation a task needs with {names.search} {{query}} first; it gives the app, the tool "
        f"and its arguments, and {names.install} {{app}} installs an app it found that is not installed yet. "
        f"Each {names.guide_pattern()} tool returns that app's operation guide (callable whether it is listed "
        f"or not); run an operation with {names.exec} {{app, tool, args}}, and several that pass results on "
        f"with {names.run} {{steps}}."
    )


@cache
def batch_schema(style: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "calls": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_BATCH,
                "items": EXEC_SCHEMA,
                "description": f"Operations, each as {spelling(style).exec} takes it",
            },
            "parallel": {"type": "boolean", "default": True, "description": "Run at once (else one after another)"},
            "stopOnError": {
                "type": "boolean",
                "default": False,
                "description": "Skip calls not started after a failure",
            },
        },
        "required": ["calls"],
    }


BATCH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "app": {"type": "string"},
                    "tool": {"type": "string"},
                    "status": {"enum": ["ok", "error", "skipped"]},
                    "result": ANY_JSON,
                    "error": ERROR_SCHEMA,
                    "durationMs": {"type": "number"},
                },
                "required": ["status"],
            },
        },
        "ok": {"type": "integer"},
        "error": {"type": "integer"},
        "skipped": {"type": "integer"},
        "durationMs": {"type": "number"},
    },
    "required": ["results", "ok", "error", "skipped", "durationMs"],
}


GUIDE_ANNOTATIONS: dict[str, Any] = {"readOnlyHint": True}
"""An app entry only hands out the guide. Read-only implies idempotent and not destructive in MCP (those two
hints count only when readOnlyHint is false), so one key says it all: it is repeated once per app."""
DISCOVER_ANNOTATIONS: dict[str, Any] = {"title": "Discover a web app", "readOnlyHint": True, "openWorldHint": True}
EXEC_ANNOTATIONS: dict[str, Any] = {"title": "Run an app operation", "destructiveHint": True, "openWorldHint": True}
"""It runs whatever operation it is given, so it may change or delete things, in apps or on the web."""
BATCH_ANNOTATIONS: dict[str, Any] = {**EXEC_ANNOTATIONS, "title": "Run app operations in a batch"}
RUN_ANNOTATIONS: dict[str, Any] = {**EXEC_ANNOTATIONS, "title": "Run a plan of app operations"}
INSTALL_ANNOTATIONS: dict[str, Any] = {
    "title": "Install an app",
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": True,
}
"""It adds an app (never replaces one) and installing it twice changes nothing more."""
SEARCH_ANNOTATIONS: dict[str, Any] = {"title": "Find an app operation", "readOnlyHint": True, "openWorldHint": True}
WAIT_ANNOTATIONS: dict[str, Any] = {"title": "Wait for an app's event", "readOnlyHint": True, "openWorldHint": True}


def tool_list(gateway: Gateway, names: Names) -> list[dict[str, Any]]:
    """The guide model's tools: the fixed ones first (search, install, exec, batch, run, wait, discovery), then one
    guide entry per app. Clients that pass only the first N tools to their model (Cursor 40, Windsurf 50) keep
    the fixed ones however many apps there are.

    Keys follow the SDK's field order (annotations last), so both answer paths write the same bytes."""
    fixed: list[dict[str, Any]] = [
        {
            "name": names.search,
            "description": SEARCH_DESCRIPTION,
            "inputSchema": SEARCH_SCHEMA,
            "outputSchema": SEARCH_OUTPUT_SCHEMA,
            "annotations": SEARCH_ANNOTATIONS,
        },
        {
            "name": names.install,
            "description": INSTALL_DESCRIPTION,
            "inputSchema": INSTALL_SCHEMA,
            "annotations": INSTALL_ANNOTATIONS,
        },
        {
            "name": names.exec,
            "description": EXEC_DESCRIPTION,
            "inputSchema": EXEC_SCHEMA,
            "annotations": EXEC_ANNOTATIONS,
        },
        {
            "name": names.batch,
            "description": BATCH_DESCRIPTION,
            "inputSchema": batch_schema(names.style),
            "outputSchema": BATCH_OUTPUT_SCHEMA,
            "annotations": BATCH_ANNOTATIONS,
        },
        {
            "name": names.run,
            "description": RUN_DESCRIPTION,
            "inputSchema": RUN_SCHEMA,
            "outputSchema": RUN_OUTPUT_SCHEMA,
            "annotations": RUN_ANNOTATIONS,
        },
        {
            "name": names.wait,
            "description": WAIT_DESCRIPTION,
            "inputSchema": WAIT_SCHEMA,
            "outputSchema": WAIT_OUTPUT_SCHEMA,
            "annotations": WAIT_ANNOTATIONS,
        },
        {
            "name": names.discover,
            "description": DISCOVER_DESCRIPTION,
            "inputSchema": DISCOVER_SCHEMA,
            "annotations": DISCOVER_ANNOTATIONS,
        },
    ]
    mode = gateway.settings.catalogue
    if mode == "search":
        return fixed
    guides = [
        {
            "name": names.guide(app.app_id),
            "description": catalogue_entry(app),
            "inputSchema": EMPTY_SCHEMA,
            "annotations": GUIDE_ANNOTATIONS,
        }
        for app in gateway.apps()
    ]
    if mode == "auto" and not fits(fixed, guides):
        return fixed
    return fixed + guides


AUTO_MOST_TOOLS = 30
AUTO_MOST_TOKENS = 3000
"""What `catalogue: "auto"` lists apps within: a share of the context of a small model, and within the
first 40 tools Cursor passes on beside other servers' tools."""


def fits(fixed: list[dict[str, Any]], guides: list[dict[str, Any]]) -> bool:
    """Whether a listing with every app's guide tool stays within `AUTO_MOST_TOOLS` and `AUTO_MOST_TOKENS`
    (estimated as bytes / 4, the usual measure for English and JSON)."""
    if len(fixed) + len(guides) > AUTO_MOST_TOOLS:
        return False
    size = len(json.dumps(fixed + guides, separators=(",", ":"), ensure_ascii=False).encode())
    return size // 4 <= AUTO_MOST_TOKENS

"""The MCP server: the guide model of seed 004 (app entries, `aai:exec`, `web:discover`)."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext

from aai_gateway import __version__
from aai_gateway.descriptor.guide import catalogue_entry
from aai_gateway.errors import AaiError, AutomationNotSupported, InvalidParams, ToolNotFound
from aai_gateway.mcp.errors import to_mcp
from aai_gateway.service import Caller, Gateway

APP_PREFIX = "app:"
EXEC = "aai:exec"
DISCOVER = "web:discover"

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

DISCOVER_TOOL = types.Tool(
    name=DISCOVER,
    description="Discover web app guide. Use when user mentions a web service. Supports URL/domain/name.",
    input_schema={
        "type": "object",
        "properties": {"url": {"type": "string", "description": "Web app URL, domain, or name"}},
        "required": ["url"],
    },
)

EXEC_TOOL = types.Tool(
    name=EXEC,
    description="Execute app operation. Parameters: app, tool, args. Use after reading guide.",
    input_schema={
        "type": "object",
        "properties": {
            "app": {"type": "string", "description": "App ID or URL"},
            "tool": {"type": "string", "description": "Operation name"},
            "args": {"type": "object", "description": "Parameters"},
        },
        "required": ["app", "tool"],
    },
)


def build_server(gateway: Gateway, transport: str = "stdio") -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = [
            types.Tool(name=APP_PREFIX + app.app_id, description=catalogue_entry(app), input_schema=EMPTY_SCHEMA)
            for app in gateway.apps()
        ]
        return types.ListToolsResult(tools=[*tools, DISCOVER_TOOL, EXEC_TOOL])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            return await _dispatch(gateway, _caller(ctx, transport), params.name, params.arguments or {})
        except AaiError as exc:
            raise to_mcp(exc) from None

    return Server(
        "aai-gateway",
        version=__version__,
        instructions=(
            "Each app:<id> tool returns that app's operation guide; "
            "then run an operation with aai:exec {app, tool, args}."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _dispatch(gateway: Gateway, caller: Caller, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    if name.startswith(APP_PREFIX):
        return _text(gateway.guide(name[len(APP_PREFIX) :]))
    if name == EXEC:
        app, tool, args = _exec_arguments(arguments)
        return _result(await gateway.call(app, tool, args, caller))
    if name == DISCOVER:
        raise AutomationNotSupported("web:discover is not available in this version of the gateway")
    raise ToolNotFound(f"no tool named '{name}'; the tools are app:<appId>, {EXEC} and {DISCOVER}")


def _exec_arguments(arguments: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    app, tool, args = arguments.get("app"), arguments.get("tool"), arguments.get("args", {})
    for key, value in (("app", app), ("tool", tool)):
        if not isinstance(value, str) or not value:
            raise InvalidParams(f"{EXEC} needs '{key}' as a non-empty string")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise InvalidParams(f"{EXEC} needs 'args' as an object of named arguments")
    assert isinstance(app, str)
    assert isinstance(tool, str)
    return app, tool, args


def _caller(ctx: ServerRequestContext[Any], transport: str) -> Caller:
    params = ctx.session.client_params
    name = params.client_info.name if params is not None else "unknown"
    return Caller(name=name, transport=transport)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _result(value: Any) -> types.CallToolResult:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return _text(text)

"""A stdio MCP server on the official SDK, for what the npm servers never do: answer a call with a
JSON-RPC error (`refuse`), note that a call was cancelled (`wait`, which writes the file named by
`argv[1]` when its call is cancelled), and take a secret only its schema says is one (`sign`, whose
`code` is `"format": "password"`).

    python -m tests.mcpservers.sdk_server CANCELLED_FILE
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

CANCELLED = Path(sys.argv[1]) if len(sys.argv) > 1 else None
TOOLS = [
    types.Tool(name="refuse", description="Answers with a JSON-RPC error", input_schema={"type": "object"}),
    types.Tool(
        name="wait",
        description="Waits, and notes a cancellation",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
    ),
    types.Tool(
        name="sign",
        description="Signs with a one-time code",
        input_schema={"type": "object", "properties": {"code": {"type": "string", "format": "password"}}},
    ),
]


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "refuse":
        raise MCPError(code=types.INTERNAL_ERROR, message="the ledger is locked by another user")
    if params.name == "sign":
        return types.CallToolResult(content=[types.TextContent(type="text", text="signed")])
    try:
        await anyio.sleep(float((params.arguments or {})["seconds"]))
    except anyio.get_cancelled_exc_class():
        if CANCELLED is not None:
            CANCELLED.write_text("cancelled")
        raise
    return types.CallToolResult(content=[types.TextContent(type="text", text="waited")])


async def main() -> None:
    server: Server[Any] = Server("sdk-server", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)

"""The official MCP SDK client, driving the installed `aai-gateway --mcp` over stdio."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

from tests.support import gateway_command


@asynccontextmanager
async def stdio_session(env: Mapping[str, str], stderr: Path, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=gateway_command(), args=["--mcp", *args], env=dict(env))
    with stderr.open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def error_of(session: ClientSession, name: str, arguments: dict[str, Any]) -> types.ErrorData:
    try:
        result = await session.call_tool(name, arguments)
    except MCPError as exc:
        return exc.error
    raise AssertionError(f"{name} succeeded: {result}")

"""MCP over stdio: nothing but protocol messages reach stdout."""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server

from aai_gateway.mcp.reload import keep_fresh
from aai_gateway.mcp.server import GatewayServer
from aai_gateway.service import Gateway


def serve_stdio(gateway: Gateway) -> None:
    async def main() -> None:
        server = GatewayServer(gateway, transport="stdio")
        try:
            async with anyio.create_task_group() as group, stdio_server() as (read, write):
                group.start_soon(keep_fresh, server)
                await server.server.run(read, write, server.initialization_options())
                group.cancel_scope.cancel()
        finally:
            await gateway.aclose()

    anyio.run(main)

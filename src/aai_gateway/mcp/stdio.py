"""MCP over stdio: nothing but protocol messages reach stdout."""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server

from aai_gateway.mcp.server import build_server
from aai_gateway.service import Gateway


def serve_stdio(gateway: Gateway) -> None:
    async def main() -> None:
        server = build_server(gateway)
        try:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        finally:
            await gateway.aclose()

    anyio.run(main)

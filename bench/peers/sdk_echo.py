"""The peer a user would write instead of the gateway: one MCP SDK `MCPServer` for the echo app, its one
tool calling Echo over dbus-fast, served over stdio or streamable HTTP.

    python bench/peers/sdk_echo.py stdio
    python bench/peers/sdk_echo.py http PORT
"""

from __future__ import annotations

import os
import sys
from typing import Any

from dbus_fast import Message
from dbus_fast.aio import MessageBus
from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")
_bus: list[MessageBus] = []


@server.tool()
async def aai_exec(app: str, tool: str, args: dict[str, Any]) -> str:
    """Echo a text through the echo app."""
    if not _bus:
        _bus.append(await MessageBus(bus_address=os.environ["DBUS_SESSION_BUS_ADDRESS"]).connect())
    reply = await _bus[0].call(
        Message(
            destination="dev.aai.Echo",
            path="/dev/aai/Echo",
            interface="dev.aai.Echo",
            member="Echo",
            signature="s",
            body=[str(args.get("text", ""))],
        )
    )
    return str(reply.body[0]) if reply is not None else ""


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        server.run("stdio")

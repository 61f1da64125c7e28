"""The gateway as a client of the MCP servers it serves as apps (execution type `mcp`).

`aai_gateway.mcp` speaks the protocol to the gateway's own clients; this package speaks it to the
servers behind the gateway, and is the only other place that imports the MCP SDK. It sits below the
executors: `executors/mcp.py` resolves a descriptor's secrets and auth, then hands this package a
plain `Launch` and asks it for tools and calls.
"""

from aai_gateway.mcp_client.server import Launch, Listener, Server, ServerStatus

__all__ = ["Launch", "Listener", "Server", "ServerStatus"]

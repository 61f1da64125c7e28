"""aai-gateway: an MCP server that drives desktop and web apps through their native automation."""

__version__ = "0.1.0"

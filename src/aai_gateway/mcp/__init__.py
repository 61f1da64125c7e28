"""The MCP face of the gateway, built on the official SDK; the only package that imports it."""

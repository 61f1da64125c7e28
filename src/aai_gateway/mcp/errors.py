"""The one place gateway errors become MCP wire errors (seed 003 §2.7)."""

from __future__ import annotations

from mcp import MCPError

from aai_gateway.errors import AaiError


def to_mcp(error: AaiError) -> MCPError:
    """`{code, message, data: {type, detail}}`; the message carries the detail for clients that show only it."""
    return MCPError(code=error.code, message=str(error), data={"type": error.type, "detail": error.detail})

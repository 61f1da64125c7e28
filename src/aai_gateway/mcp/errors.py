"""The one place gateway errors become MCP wire errors (seed 003 §2.7), in either style."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp import MCPError

from aai_gateway.errors import AaiError


def to_mcp(error: AaiError) -> MCPError:
    """`{code, message, data: {type, detail}}`; the message carries the detail for clients that show only it."""
    return MCPError(code=error.code, message=str(error), data={"type": error.type, "detail": error.detail})


def to_wire(error: AaiError) -> dict[str, Any]:
    """`to_mcp`'s error as the `error` member of a JSON-RPC response, for answers written without the SDK."""
    wire: dict[str, Any] = to_mcp(error).error.model_dump(mode="json", exclude_none=True)
    return wire


def to_result(error: AaiError) -> types.CallToolResult:
    """The same error as an `isError` tool result, for clients that hide JSON-RPC errors from the model."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{error} [{error.code} {error.type}]")],
        structured_content={"error": {"code": error.code, "type": error.type, "detail": error.detail}},
        is_error=True,
    )

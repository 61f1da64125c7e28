"""The one place gateway errors become MCP wire errors (seed 003 §2.7), in either style.

By default (`errorStyle: "result"`, MCP 2025-11-25 SEP-1303) an error of a tool call, a refused argument
included, is a tool result with `isError: true` that the model reads and can act on; `"jsonrpc"` makes it
a JSON-RPC error instead. A name that is no tool is a protocol error in both styles.

The SDK's `MCPError` is imported where one is made, not with this module: a stdio session is served
without the SDK until it needs it (mcp/stdio.py), and its calls' errors pass through here. Results are
plain JSON (mcp/results.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aai_gateway.errors import AaiError, ToolNotFound
from aai_gateway.mcp.results import ToolResult, tool_result

if TYPE_CHECKING:
    from mcp import MCPError

INVALID_PARAMS = -32602


def error_body(error: AaiError) -> dict[str, Any]:
    """`{code, message, data: {type, detail}}`; the message carries the detail for clients that show only it."""
    return {"code": error.code, "message": str(error), "data": {"type": error.type, "detail": error.detail}}


def to_mcp(error: AaiError) -> MCPError:
    """`error_body` as the SDK's error."""
    from mcp import MCPError  # noqa: PLC0415 (see the module's docstring)

    return MCPError(**error_body(error))


def to_result(error: AaiError) -> ToolResult:
    """The same error as an `isError` tool result: one line of text for the model, the parts for programs."""
    structured = {"error": {"code": error.code, "type": error.type, "detail": error.detail}}
    return tool_result(result_text(error), structured, is_error=True)


def result_text(error: AaiError) -> str:
    """`INVALID_PARAMS (-32005): args.count: 'x' is not of type 'integer'`: type, code and detail on one line."""
    return f"{error.type} ({error.code}): {' '.join(error.detail.split())}"


def answer(error: AaiError, style: str) -> ToolResult:
    """A failed tool call's answer in `style`; raises the JSON-RPC error instead where the style wants one."""
    if style == "result":
        return to_result(error)
    raise to_mcp(error) from None


def unknown_tool(error: ToolNotFound, style: str) -> MCPError:
    """A called name that is no tool: a protocol error, with MCP's code (-32602) in the result style and the
    protocol's own (-32003) in the JSON-RPC style; the type and detail travel in `data` either way."""
    from mcp import MCPError  # noqa: PLC0415 (see the module's docstring)

    if style == "result":
        message = f"Unknown tool: {error.detail}"
        return MCPError(code=INVALID_PARAMS, message=message, data={"type": error.type, "detail": error.detail})
    return to_mcp(error)


def resource_not_found(error: AaiError, uri: str, style: str) -> MCPError:
    """A `resources/read` of a resource that does not exist: MCP's -32602 with the URI in `data` (SEP-2164) in
    the result style; the protocol's own code (APP_NOT_FOUND, -32002) in the JSON-RPC style."""
    from mcp import MCPError  # noqa: PLC0415 (see the module's docstring)

    data = {"uri": uri, "type": error.type, "detail": error.detail}
    code = INVALID_PARAMS if style == "result" else error.code
    return MCPError(code=code, message=str(error), data=data)

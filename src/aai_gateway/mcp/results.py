"""A tool call's result in its wire form: a `CallToolResult` as every handshake-era protocol version
writes it, `{"content": [{"type": "text", "text": ...}], "isError": ..., "structuredContent": ...}`.

The gateway's own results are built here as plain JSON, without the SDK's types, so that a stdio session
served without the SDK (mcp/wire/front.py) needs neither it nor `mcp_types`. The SDK's path takes the
same dicts (a handler may return one; the SDK checks it against the session's protocol version). Only
an MCP server's own answer, whose content blocks may be of any kind, is read through the SDK's types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ToolResult = dict[str, Any]

_OWN_KEYS = frozenset({"content", "isError", "structuredContent"})


def _text_block(block: object) -> bool:
    return isinstance(block, dict) and block.keys() == {"type", "text"} and block["type"] == "text"


def tool_result(text: str, structured: Mapping[str, Any] | None = None, *, is_error: bool = False) -> ToolResult:
    """One text block; `structured` as its `structuredContent` when given."""
    result: ToolResult = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def typed(result: ToolResult) -> ToolResult:
    """`result` with the `resultType` the SDK's own `CallToolResult` carries, for the SDK to check: the
    2026-07-28 revision requires it, earlier ones drop it. A task's answer keeps its own."""
    return result if "resultType" in result else {**result, "resultType": "complete"}


def forwarded(value: Mapping[str, Any]) -> ToolResult:
    """An MCP server's answer, as the SDK reads it (a malformed one raises pydantic's ValidationError)."""
    import mcp_types as types  # noqa: PLC0415 (see the module's docstring)

    dumped: ToolResult = types.CallToolResult.model_validate(value).model_dump(
        by_alias=True, mode="json", exclude_none=True
    )
    return dumped


def on_the_wire(result: ToolResult, version: str | None) -> ToolResult:
    """`result` as the SDK writes it for `version`: the gateway's own as it is, any other through the SDK's
    check of the version's `CallToolResult` (which drops what the version does not know)."""
    content = result.get("content")
    if result.keys() <= _OWN_KEYS and isinstance(content, list) and all(map(_text_block, content)):
        return result
    if version is None:
        return result
    from mcp_types.methods import serialize_server_result  # noqa: PLC0415 (see the module's docstring)

    return serialize_server_result("tools/call", version, result)

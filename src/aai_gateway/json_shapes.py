"""JSON Schema pieces the gateway's own tools share in their output schemas."""

from __future__ import annotations

from typing import Any

ANY_JSON: dict[str, Any] = {"anyOf": [{"type": t} for t in ("object", "array", "string", "number", "boolean", "null")]}
"""Any JSON value, said with a keyword (clients warn of a schema that says nothing)."""
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "integer"}, "type": {"type": "string"}, "detail": {"type": "string"}},
    "required": ["code", "type", "detail"],
}
"""An error as answers carry it: `{code, type, detail}`."""

"""What aai:run and aai:batch take and answer, for the listing (which must not load the plan engine)."""

from __future__ import annotations

from typing import Any

from aai_gateway.json_shapes import ANY_JSON, ERROR_SCHEMA

MAX_BATCH = 100
"""Most calls one aai:batch may carry."""
MAX_STEPS = 100
"""Most steps one plan may have."""
MAX_ITEMS = 1_000
"""Items one `forEach` may run over."""

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"enum": ["ok", "failed", "rolledBack"]},
        "output": ANY_JSON,
        "outputError": {"type": "string"},
        "durationMs": {"type": "number"},
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "app": {"type": "string"},
                    "tool": {"type": "string"},
                    "status": {"enum": ["ok", "failed", "skipped", "undone"]},
                    "durationMs": {"type": "number"},
                    "result": ANY_JSON,
                    "error": ERROR_SCHEMA,
                    "reason": {"type": "string"},
                    "undo": {"type": "object", "properties": {"status": {"enum": ["ok", "failed", "none"]}}},
                },
                "required": ["id", "app", "tool", "status"],
            },
        },
    },
    "required": ["status", "steps", "durationMs"],
}
"""The structured content of an aai:run answer."""

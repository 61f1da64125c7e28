"""The structured content `aai_search` answers with, as a JSON Schema (its `outputSchema`)."""

from __future__ import annotations

from typing import Any

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "app": {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}},
                    "tool": {"type": "string"},
                    "title": {"type": "string"},
                    "description": {"type": "string"},
                    "parameters": {"type": "object"},
                    "annotations": {"type": "object"},
                    "installed": {"type": "boolean"},
                    "runnable": {"type": "boolean"},
                    "whyNot": {"type": "string"},
                    "source": {"type": "string"},
                    "reliability": {"type": "string"},
                    "alsoIn": {"type": "array", "items": {"type": "string"}},
                    "score": {"type": "number"},
                },
                "required": ["app", "tool", "description", "installed", "runnable", "source", "score"],
            },
        },
        "fits": {"type": "boolean"},
        "hint": {"type": "string"},
    },
    "required": ["results", "fits"],
}

"""What aai:wait takes and answers, for the listing (which must not load the events themselves)."""

from __future__ import annotations

from typing import Any

from aai_gateway.json_shapes import ANY_JSON

MAX_TIMEOUT = 3600
"""Seconds one wait may last."""
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "app": {"type": "string"},
        "event": {"type": "string"},
        "timedOut": {"type": "boolean"},
        "payload": ANY_JSON,
        "at": {"type": "string"},
        "dropped": {"type": "integer"},
    },
    "required": ["app", "event", "timedOut"],
}

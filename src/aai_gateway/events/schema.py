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
        "timedOut": {"type": "boolean", "description": "True when nothing came within the timeout"},
        "payload": {**ANY_JSON, "description": "What the app announced, as the guide describes the event"},
        "at": {"type": "string", "description": "When the gateway noticed it (ISO 8601, UTC)"},
        "dropped": {"type": "integer", "description": "Occurrences dropped while they came faster than read"},
    },
    "required": ["app", "event", "timedOut"],
}

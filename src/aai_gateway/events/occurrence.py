"""One thing that happened, and what a waiter is given of it: its payload, bounded in size."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aai_gateway import expressions
from aai_gateway.descriptor.model import Event

MAX_PAYLOAD = 256 * 1024
"""Bytes of JSON a payload may take; a larger one is replaced by a note saying how large it was."""


@dataclass(frozen=True, slots=True)
class Occurrence:
    app: str
    event: str
    payload: Any
    at: str
    """When the gateway noticed it, ISO 8601 in UTC."""

    def to_json(self) -> dict[str, Any]:
        return {"app": self.app, "event": self.event, "payload": self.payload, "at": self.at}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def shaped(event: Event, raw: Any) -> Any:
    """`raw` as the event's `payload` template makes it (the raw payload when it has none), bounded in size;
    a template that fails gives a note saying why instead."""
    if event.payload is not None:
        try:
            raw = expressions.render(event.payload, raw if isinstance(raw, dict) else {"value": raw}, "payload")
        except expressions.ExpressionError as exc:
            return {"note": f"the event's payload template failed: {exc}"}
    return bounded(raw)


def bounded(payload: Any) -> Any:
    """`payload`, or a note in its place when its JSON outgrows `MAX_PAYLOAD`."""
    size = len(json.dumps(payload, ensure_ascii=False, default=str).encode())
    if size <= MAX_PAYLOAD:
        return payload
    return {"truncated": True, "bytes": size, "note": f"the payload was {size} bytes, more than {MAX_PAYLOAD}: dropped"}

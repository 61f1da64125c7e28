"""Shape A: one descriptor, several platforms (seeds 000/002/003)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aai_gateway.descriptor.formats.common import events_of, make_tool, pipe_names
from aai_gateway.descriptor.model import Binding, Descriptor

TIMEOUT_SCALE = {"android": 0.001}
"""Android tool timeouts are written in milliseconds (seed 000); the model keeps seconds."""


def normalise(doc: Mapping[str, Any], source: str = "") -> Descriptor:
    bindings: dict[str, Binding] = {}
    for platform, raw in doc["platforms"].items():
        scale = TIMEOUT_SCALE.get(platform, 1.0)
        bindings[platform] = Binding(
            platform=platform,
            automation=raw["automation"],
            tools=tuple(make_tool(t, timeout_scale=scale) for t in raw.get("tools", [])),
            options={k: v for k, v in raw.items() if k not in ("automation", "tools", "auth")},
            auth=raw.get("auth"),
        )
    return Descriptor(
        app_id=doc["appId"],
        names=pipe_names(doc["name"]),
        description=doc.get("description", ""),
        bindings=bindings,
        shape="multi",
        aliases=tuple(doc.get("aliases", ())),
        version=doc.get("version"),
        source=source,
        events=events_of(doc),
        document=doc,
    )

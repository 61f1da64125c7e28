"""One adapter per descriptor shape. All declare schema version 1.0, so the shape is told by structure."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aai_gateway.descriptor import instances
from aai_gateway.descriptor.formats import camel, multi, single
from aai_gateway.descriptor.model import Descriptor, Shape

NORMALISERS: Mapping[Shape, Callable[[Mapping[str, Any], str], Descriptor]] = {
    "multi": multi.normalise,
    "single": single.normalise,
    "camel": camel.normalise,
}


def detect(doc: Mapping[str, Any]) -> Shape | None:
    """Which shape a parsed document is written in, or None when it is none of them.

    A: a `platforms` object. C: a `schemaVersion` key, or an `app.name` object of language tags.
    B: an `app` object with `schema_version`/`platform`.
    """
    if "platforms" in doc or "appId" in doc:
        return "multi"
    app = doc.get("app")
    if "schemaVersion" in doc or (isinstance(app, Mapping) and isinstance(app.get("name"), Mapping)):
        return "camel"
    if "app" in doc or "platform" in doc:
        return "single"
    return None


def normalise(doc: Mapping[str, Any], shape: Shape, source: str = "") -> Descriptor:
    """Turn a document already valid against its shape's schema into the model."""
    return instances.with_argument(NORMALISERS[shape](doc, source))

"""Walking a tool's parameters schema, shared by the parameter list and the example arguments: local `$ref`s
followed and `allOf` parts merged into one schema (`Schemas`), the subschema a property name falls under, the small
readers that take a keyword's value only when it has the right JSON type, and the limits that keep a recursive or
hostile schema from being walked forever.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from aai_gateway.descriptor.safe_schema import matches

TYPE_HINTS = (
    ("object", ("properties", "required", "additionalProperties", "patternProperties", "minProperties")),
    ("array", ("items", "minItems", "maxItems", "uniqueItems", "contains")),
    ("string", ("pattern", "format", "minLength", "maxLength")),
    ("number", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")),
)
BRANCHES = ("anyOf", "oneOf")
MAX_DEPTH = 8
MAX_REFS = 32


class Schemas:
    """The subschemas of one parameters schema, its local `$ref`s followed and `allOf`s merged."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def resolve(self, spec: Any) -> Mapping[str, Any]:
        """The schema `spec` stands for."""
        return self.expand(spec)[0]

    def expand(self, spec: Any, depth: int = 0) -> tuple[Mapping[str, Any], frozenset[str]]:
        """The schema `spec` stands for, and the `$ref`s followed to reach it."""
        refs: set[str] = set()
        notes = {k: spec[k] for k in ("description", "title") if k in spec} if isinstance(spec, Mapping) else {}
        for _ in range(MAX_REFS):
            if not isinstance(spec, Mapping) or not isinstance(spec.get("$ref"), str):
                break
            refs.add(spec["$ref"])
            spec = self._target(spec["$ref"])
        if not isinstance(spec, Mapping) or "$ref" in spec:
            return notes, frozenset(refs)
        spec = {**spec, **notes} if refs else spec
        parts = spec.get("allOf")
        if not isinstance(parts, list) or depth > MAX_DEPTH:
            return spec, frozenset(refs)
        merged: Mapping[str, Any] = {k: v for k, v in spec.items() if k != "allOf"}
        for part in parts:
            resolved, followed = self.expand(part, depth + 1)
            merged, refs = merge(merged, resolved), refs | followed
        return merged, frozenset(refs)

    def _target(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return {}
        node: Any = self.root
        for token in filter(None, unquote(ref[1:]).split("/")):
            key = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping):
                node = node.get(key, {})
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                return {}
        return node


def merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `extra`'s keywords on top, their `properties` merged by name and their `required` lists joined."""
    merged = {**base, **extra}
    if isinstance(base.get("properties"), Mapping) and isinstance(extra.get("properties"), Mapping):
        props = dict(base["properties"])
        for name, spec in extra["properties"].items():
            both = isinstance(props.get(name), Mapping) and isinstance(spec, Mapping)
            props[name] = merge(props[name], spec) if both else spec
        merged["properties"] = props
    if isinstance(base.get("required"), list) and isinstance(extra.get("required"), list):
        merged["required"] = list(dict.fromkeys([*base["required"], *extra["required"]]))
    return merged


def without(spec: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """`spec` without the keywords `keys`."""
    return {k: v for k, v in spec.items() if k not in keys}


def names(value: Any) -> list[str]:
    """The strings of a list such as `required`; none if `value` is not a list."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def is_number(value: Any) -> bool:
    """Whether `value` is a finite JSON number (booleans are not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or math.isfinite(value)


def mapping(spec: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """The object under `key`, or an empty one if it is missing or not an object."""
    value = spec.get(key)
    return value if isinstance(value, Mapping) else {}


def property_schema(spec: Mapping[str, Any], name: str) -> Any:
    """The subschema of property `name`: from `properties`, else `patternProperties`, else `additionalProperties`."""
    props = spec.get("properties")
    if isinstance(props, Mapping) and name in props:
        return props[name]
    patterns = spec.get("patternProperties")
    for pattern, sub in patterns.items() if isinstance(patterns, Mapping) else []:
        if isinstance(pattern, str) and matches(pattern, name):
            return sub
    extra = spec.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else {}

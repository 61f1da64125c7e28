"""The arguments of the operation guide's `aai:exec` example: for each required parameter a value built from its
schema (listed examples, defaults and enums first, then values made from its type, format, pattern and bounds), each
candidate checked against the schema, with the formats jsonschema leaves to optional packages, before it is offered.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from functools import partial
from itertools import chain
from typing import Any

from jsonschema import FormatChecker

from aai_gateway.descriptor.patterns import MAX_SIZE, pattern_examples
from aai_gateway.descriptor.safe_schema import SafeValidator, deadline
from aai_gateway.descriptor.subschemas import (
    BRANCHES,
    MAX_DEPTH,
    TYPE_HINTS,
    Schemas,
    is_number,
    mapping,
    merge,
    names,
    property_schema,
    without,
)

FORMAT_EXAMPLES = {
    "date-time": "2024-12-31T15:00:00Z",
    "date": "2024-12-31",
    "time": "15:00:00Z",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uri": "https://example.com",
    "uri-reference": "https://example.com",
    "iri": "https://example.com",
    "iri-reference": "https://example.com",
    "uri-template": "https://example.com/{id}",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "json-pointer": "/path",
    "relative-json-pointer": "0",
    "regex": ".*",
    "duration": "P1D",
}

_TIME = r"T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S)"
FORMAT_SHAPES = {
    "date-time": r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)",
    "time": r"\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)",
    "uri": r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]+",
    "iri": r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]+",
    "uri-reference": r"[^\s]*",
    "iri-reference": r"[^\s]*",
    "uri-template": r"([^\s{}]|\{[^\s{}]+\})*",
    "hostname": r"(?=.{1,253}$)(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*",
    "uuid": r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}",
    "duration": rf"P(\d+Y(\d+M(\d+D)?)?({_TIME})?|\d+M(\d+D)?({_TIME})?|\d+D({_TIME})?|{_TIME}|\d+W)",
    "json-pointer": r"(/([^/~]|~[01])*)*",
    "relative-json-pointer": r"(0|[1-9]\d*)(#|(/([^/~]|~[01])*)*)",
}
"""The formats jsonschema checks only with optional packages installed, after RFC 3339, 3986 and 6901."""

JSON_TYPES = ("string", "integer", "number", "boolean", "object", "array", "null")


EXAMPLE_SECONDS = 0.5
"""Time the candidates of one tool's example may take to check; then the first candidates found serve."""


def example_args(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments valid against `schema`: the required ones, plus one optional one that has `examples`."""
    with deadline(EXAMPLE_SECONDS):
        return _Examples(schema).args()


def _size(spec: Mapping[str, Any], key: str) -> int | None:
    value = spec.get(key)
    return min(value, MAX_SIZE) if isinstance(value, int) and not isinstance(value, bool) else None


_NOTHING = object()


def _format_checker() -> FormatChecker:
    checker = FormatChecker(SafeValidator.FORMAT_CHECKER.checkers)
    for name, shape in FORMAT_SHAPES.items():
        if name not in checker.checkers:
            checker.checks(name)(partial(_has_shape, re.compile(shape)))
    return checker


def _has_shape(shape: re.Pattern[str], value: object) -> bool:
    return not isinstance(value, str) or shape.fullmatch(value) is not None


FORMATS = _format_checker()


class _Examples:
    """Example values for one parameters schema, each checked against the schema before it is offered."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.schemas = Schemas(root)
        self.validator = SafeValidator(root, format_checker=FORMATS)

    def args(self) -> dict[str, Any]:
        found = self.value(self.schemas.root, "args")
        args = found if isinstance(found, dict) else {}
        props = self.schemas.resolve(self.schemas.root).get("properties")
        for name, spec in props.items() if isinstance(props, Mapping) else []:
            examples = self.schemas.resolve(spec).get("examples")
            if name in args or not isinstance(examples, list):
                continue
            for example in examples:
                if self.valid(self.schemas.root, {**args, name: example}):
                    return {**args, name: example}
        return args

    def valid(self, spec: Any, value: Any) -> bool:
        """Whether `value` is valid; a schema the validator cannot apply (bad regex, bad `$ref`) is not."""
        try:
            return bool(self.validator.evolve(schema=spec).is_valid(value))
        except Exception:
            return False

    def value(self, spec: Any, name: str, depth: int = 0) -> Any:
        first: Any = _NOTHING
        for candidate in self._candidates(spec, name, depth):
            if self.valid(spec, candidate):
                return candidate
            first = candidate if first is _NOTHING else first
        return f"<{name}>" if first is _NOTHING else first

    def _candidates(self, raw: Any, name: str, depth: int) -> Iterator[Any]:
        spec = self.schemas.resolve(raw)
        if depth > MAX_DEPTH:
            return
        yield from _listed(spec)
        for key in BRANCHES:
            branches = spec.get(key)
            base = without(spec, key, "examples", "default")
            for branch in branches if isinstance(branches, list) else []:
                yield self.value(merge(base, self.schemas.resolve(branch)), name, depth + 1)
        for kind in _example_kinds(spec):
            yield from self._typed(kind, spec, name, depth)

    def _typed(self, kind: str, spec: Mapping[str, Any], name: str, depth: int) -> Iterator[Any]:
        if kind == "string":
            return _strings(spec, name)
        if kind in ("integer", "number"):
            return _numbers(spec, integer=kind == "integer")
        if kind == "array":
            return self._arrays(spec, name, depth)
        if kind == "object":
            return iter([self._object(spec, depth)])
        fixed: dict[str, list[Any]] = {"boolean": [True, False], "null": [None]}
        return iter(fixed.get(kind, []))

    def _object(self, spec: Mapping[str, Any], depth: int) -> dict[str, Any]:
        props, required = mapping(spec, "properties"), names(spec.get("required"))
        wanted = [n for n in props if n in required] + [n for n in dict.fromkeys(required) if n not in props]
        least = _size(spec, "minProperties") or 0
        wanted += [n for n in props if n not in wanted][: max(least - len(wanted), 0)]
        dependencies = mapping(spec, "dependencies")
        wanted += [d for n in list(wanted) for d in names(dependencies.get(n)) if d not in wanted]
        return {n: self.value(property_schema(spec, n), n, depth + 1) for n in dict.fromkeys(wanted)}

    def _arrays(self, spec: Mapping[str, Any], name: str, depth: int) -> Iterator[list[Any]]:
        items, least, most = spec.get("items"), _size(spec, "minItems") or 0, _size(spec, "maxItems")
        if isinstance(items, list):
            count = max(least, len(items)) if most is None else min(max(least, len(items)), most)
            positions = [*items, *[mapping(spec, "additionalItems")] * count][:count]
            yield [self.value(p, name, depth + 1) for p in positions]
        elif items is not None or least > 0:
            count = max(least, 1) if most is None else min(max(least, 1), most)
            each = items if items is not None else {}
            if spec.get("uniqueItems") is True:
                yield self._distinct(each, name, depth, count)
            yield [self.value(each, name, depth + 1)] * count
        yield []

    def _distinct(self, spec: Any, name: str, depth: int, count: int) -> list[Any]:
        found: dict[str, Any] = {}
        spares = chain.from_iterable((f"<{name}{n}>", n) for n in range(2, count + 2))
        for candidate in chain(self._candidates(spec, name, depth + 1), spares):
            if len(found) == count:
                break
            if self.valid(spec, candidate):
                found.setdefault(json.dumps(candidate, sort_keys=True), candidate)
        return list(found.values())


def _listed(spec: Mapping[str, Any]) -> Iterator[Any]:
    if isinstance(spec.get("examples"), list):
        yield from spec["examples"]
    if "default" in spec:
        yield spec["default"]
    if isinstance(spec.get("enum"), list):
        yield from spec["enum"]
    if "const" in spec:
        yield spec["const"]


def _example_kinds(spec: Mapping[str, Any]) -> list[str]:
    kind = spec.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return sorted((k for k in kind if isinstance(k, str)), key=lambda k: k == "null")
    hinted = [name for name, keys in TYPE_HINTS if any(k in spec for k in keys)]
    return hinted + [k for k in JSON_TYPES if k not in hinted]


def _strings(spec: Mapping[str, Any], name: str) -> Iterator[str]:
    fmt = spec.get("format")
    if isinstance(fmt, str) and fmt in FORMAT_EXAMPLES:
        yield FORMAT_EXAMPLES[fmt]
    least, most = _size(spec, "minLength") or 0, _size(spec, "maxLength")
    yield from (f"<{name}>", name, _fit(name, least, most))
    if isinstance(spec.get("pattern"), str):
        yield from pattern_examples(spec["pattern"], least)


def _fit(name: str, least: int, most: int | None) -> str:
    text = f"<{name}>" if most is None or len(name) + 2 <= most else (name or "x")[: max(most, 0)]
    return text + "x" * (least - len(text))


def _numbers(spec: Mapping[str, Any], *, integer: bool) -> Iterator[int | float]:
    lows = [spec[k] for k in ("minimum", "exclusiveMinimum") if is_number(spec.get(k))]
    highs = [spec[k] for k in ("maximum", "exclusiveMaximum") if is_number(spec.get(k))]
    step = spec["multipleOf"] if is_number(spec.get("multipleOf")) and spec["multipleOf"] > 0 else None
    for anchor in _anchors(max(lows) if lows else None, min(highs) if highs else None):
        yield from _near(anchor, step, integer=integer)


def _anchors(low: float | None, high: float | None) -> list[float]:
    anchors = [a for a in (low, 1, high) if a is not None]
    try:
        middle = [low / 2 + high / 2] if low is not None and high is not None else []
        return [*anchors, *middle, *(a + step for a in [*anchors, *middle] for step in (1, -1, 0.5, -0.5)), 0]
    except OverflowError:
        return [*anchors, 0]


def _near(anchor: float, step: float | None, *, integer: bool) -> list[int | float]:
    try:
        if step is None:
            return [math.ceil(anchor), math.floor(anchor)] if integer else [float(anchor)]
        multiples = [math.ceil(anchor / step) * step, math.floor(anchor / step) * step]
        return [int(m) if integer and float(m).is_integer() else float(m) for m in multiples]
    except (OverflowError, ValueError):
        return []

"""The parameter list of the operation guide: one readable markdown line per parameter with its type, whether it is
required, its description, constraints, allowed values and examples, nested fields indented under their parent and
`anyOf`/`oneOf` choices spelled out as options, never raw JSON Schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeAlias

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

MAX_EXAMPLE_WIDTH = 60


def parameter_lines(schema: Mapping[str, Any]) -> list[str]:
    """One markdown list line per parameter, nested fields indented under their parent."""
    return _Parameters(schema).lines()


def _required_only(branches: list[Any]) -> bool:
    return all(isinstance(b, Mapping) and set(b) <= {"required", "title", "description"} for b in branches)


def shown(text: str) -> str:
    """A name or pattern from a schema as the guide shows it: as it is, or quoted with escapes when it holds a line
    break or another character that is not printable (it could start a heading of its own)."""
    return text if text.isprintable() else json.dumps(text)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _json_type(value: Any) -> str:
    kinds = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"))
    return next((name for cls, name in kinds if isinstance(value, cls)), "null" if value is None else "object")


_Trail: TypeAlias = Mapping[str, str]


class _Parameters:
    """The guide's parameter list: readable lines, never raw JSON Schema."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.schemas = Schemas(root)

    def lines(self) -> list[str]:
        root, refs = self.schemas.expand(self.schemas.root)
        return self._below("the parameters", root, refs | {"#"}, 0, {})

    def _below(self, title: str, spec: Mapping[str, Any], refs: frozenset[str], depth: int, trail: _Trail) -> list[str]:
        seen = next((trail[r] for r in sorted(refs) if r in trail), None)
        if seen is not None:
            return [f"{'  ' * depth}- same fields as {seen}"] if self._nested(spec) else []
        return self._fields(title, spec, depth, {**trail, **dict.fromkeys(refs, title)})

    def _fields(self, title: str, spec: Mapping[str, Any], depth: int, trail: _Trail) -> list[str]:
        if depth > MAX_DEPTH:
            return []
        props, required = mapping(spec, "properties"), names(spec.get("required"))
        lines: list[str] = []
        for name in dict.fromkeys([*props, *required]):
            flag = "required" if name in required else "optional"
            lines += self._entry(name, property_schema(spec, name), flag, depth, trail)
        items = spec.get("items")
        if isinstance(items, Mapping):
            lines += self._below(title, *self.schemas.expand(items), depth, trail)
        return lines + self._choices(spec, depth, trail)

    def _entry(self, title: str, raw: Any, flag: str | None, depth: int, trail: _Trail) -> list[str]:
        spec, refs = self.schemas.expand(raw)
        label = ", ".join(filter(None, [self.label(spec), flag]))
        extras = self._extras(spec)
        head = f"{'  ' * depth}- {shown(title)} ({label})" + (": " + "; ".join(extras) if extras else "")
        return [head, *self._below(title, spec, refs, depth + 1, trail)]

    def _choices(self, spec: Mapping[str, Any], depth: int, trail: _Trail) -> list[str]:
        lines = []
        for key in BRANCHES:
            branches = spec.get(key)
            if not isinstance(branches, list) or not branches:
                continue
            if _required_only(branches):
                how = "at least" if key == "anyOf" else "exactly"
                sets = " | ".join(" and ".join(names(b.get("required"))) for b in branches)
                lines.append(f"{'  ' * depth}- requires {how} one of: {sets}")
                continue
            options = [self._option(spec, b) for b in branches]
            if any(self._nested(o) or self._extras(o) for o in options):
                for number, option in enumerate(options, 1):
                    lines += self._entry(f"option {number}", option, None, depth, trail)
        return lines

    def _nested(self, spec: Mapping[str, Any]) -> bool:
        """Whether fields are listed under `spec`: an object's, or those of the objects in an array."""
        items = spec.get("items")
        inner = self.schemas.resolve(items) if isinstance(items, Mapping) else {}
        return any(
            isinstance(s.get(k), Mapping | list) and s[k] for s in (spec, inner) for k in (*BRANCHES, "properties")
        )

    def _option(self, spec: Mapping[str, Any], branch: Any) -> dict[str, Any]:
        base = without(spec, *BRANCHES, "description", "title", "examples", "default", "properties", "required")
        return merge(base, self.schemas.resolve(branch))

    def label(self, spec: Mapping[str, Any], depth: int = 0) -> str:
        if depth > MAX_DEPTH:
            return "any"
        for key in BRANCHES:
            branches = spec.get(key)
            if isinstance(branches, list) and branches and not _required_only(branches):
                base = without(spec, *BRANCHES)
                parts = [self.label(merge(base, self.schemas.resolve(b)), depth + 1) for b in branches]
                unique = list(dict.fromkeys(parts))
                return unique[0] if len(unique) == 1 else "one of: " + " | ".join(unique)
        text = " or ".join(self._kind(kind, spec, depth) for kind in _label_kinds(spec))
        fmt = spec.get("format")
        return f"{text}, {shown(fmt)}" if isinstance(fmt, str) else text

    def _kind(self, kind: str, spec: Mapping[str, Any], depth: int) -> str:
        items = spec.get("items")
        if kind == "array" and isinstance(items, Mapping):
            return f"array of {self.label(self.schemas.resolve(items), depth + 1)}"
        if kind == "array" and isinstance(items, list):
            return f"array of ({', '.join(self.label(self.schemas.resolve(i), depth + 1) for i in items)})"
        extra = spec.get("additionalProperties")
        if kind == "object" and not spec.get("properties") and isinstance(extra, Mapping) and extra:
            return f"object with {self.label(self.schemas.resolve(extra), depth + 1)} values"
        return kind

    def _extras(self, spec: Mapping[str, Any]) -> list[str]:
        text = spec.get("description") or spec.get("title")
        said = " ".join(text.split()) if isinstance(text, str) else ""
        extras = [*_constraints(spec), *self._item_extras(spec), *_values(spec)]
        if said and extras and said.endswith(".") and not said.endswith(".."):
            said = said[:-1]
        return [said, *extras] if said else extras

    def _item_extras(self, spec: Mapping[str, Any]) -> list[str]:
        items = self.schemas.resolve(spec.get("items"))
        if not isinstance(spec.get("items"), Mapping) or self._nested(items) or "items" in items:
            return []
        text = items.get("description")
        said = [f"items: {' '.join(text.split())}"] if isinstance(text, str) and text.strip() else []
        return said + [f"each {e}" for e in [*_constraints(items), *_values(without(items, "default"))]]


def _label_kinds(spec: Mapping[str, Any]) -> list[str]:
    kind = spec.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list) and kind:
        return [str(k) for k in kind]
    listed = spec.get("enum") if isinstance(spec.get("enum"), list) else [spec["const"]] if "const" in spec else []
    if listed:
        return list(dict.fromkeys(_json_type(v) for v in listed))
    return [next((name for name, keys in TYPE_HINTS if any(k in spec for k in keys)), "any")]


def _constraints(spec: Mapping[str, Any]) -> list[str]:
    texts = [
        _number_range(spec),
        f"multiple of {_json(spec['multipleOf'])}" if is_number(spec.get("multipleOf")) else None,
        _span(spec.get("minLength"), spec.get("maxLength"), "character"),
        f"matches {shown(spec['pattern'])}" if isinstance(spec.get("pattern"), str) else None,
        _span(spec.get("minItems"), spec.get("maxItems"), "item"),
        "no duplicates" if spec.get("uniqueItems") is True else None,
        _span(spec.get("minProperties"), spec.get("maxProperties"), "key"),
    ]
    return [t for t in texts if t]


def _values(spec: Mapping[str, Any]) -> list[str]:
    texts = []
    if isinstance(spec.get("enum"), list):
        texts.append("one of " + ", ".join(_json(v) for v in spec["enum"]))
    if "const" in spec:
        texts.append(f"must be {_json(spec['const'])}")
    if "default" in spec:
        texts.append(f"default {_json(spec['default'])}")
    examples = [_json(e) for e in spec["examples"]] if isinstance(spec.get("examples"), list) else []
    shown = [e for e in examples if len(e) <= MAX_EXAMPLE_WIDTH][:2]
    return [*texts, "e.g. " + ", ".join(shown)] if shown else texts


def _number_range(spec: Mapping[str, Any]) -> str | None:
    words = {
        "minimum": "at least",
        "exclusiveMinimum": "more than",
        "maximum": "at most",
        "exclusiveMaximum": "less than",
    }
    bounds = {key: spec[key] for key in words if is_number(spec.get(key))}
    if list(bounds) == ["minimum", "maximum"]:
        low, high = _json(bounds["minimum"]), _json(bounds["maximum"])
        return f"exactly {low}" if low == high else f"{low}..{high}"
    return " and ".join(f"{words[key]} {_json(value)}" for key, value in bounds.items()) or None


def _span(low: Any, high: Any, unit: str) -> str | None:
    def counted(n: Any) -> str:
        return f"{n} {unit}" + ("" if n == 1 else "s")

    low = low if isinstance(low, int) and not isinstance(low, bool) and low > 0 else None
    high = high if isinstance(high, int) and not isinstance(high, bool) else None
    if low is not None and high is not None:
        return f"exactly {counted(low)}" if low == high else f"{low}..{counted(high)}"
    if low is not None:
        return f"at least {counted(low)}"
    return f"at most {counted(high)}" if high is not None else None


def signature(schema: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """The top-level parameters as (name, type in words, required), for one-line listings."""
    params = _Parameters(schema)
    root, _ = params.schemas.expand(params.schemas.root)
    props, required = mapping(root, "properties"), names(root.get("required"))
    return [
        (name, params.label(params.schemas.expand(property_schema(root, name))[0]), name in required)
        for name in dict.fromkeys([*props, *required])
    ]


def signature_text(schema: Mapping[str, Any]) -> str:
    """`text (string, required), count (integer, optional)`, or `no parameters`."""
    listed = [f"{name} ({kind}, {'required' if needed else 'optional'})" for name, kind, needed in signature(schema)]
    return ", ".join(listed) or "no parameters"

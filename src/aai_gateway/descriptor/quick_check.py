"""A fast check of call arguments against the plain parameter schemas most tools have.

Draft-07 validation with `jsonschema` costs tens of microseconds even for `{"text": "hi"}` against
one string property, on every call. Most tools' parameters use only `type`, `properties`,
`required`, `additionalProperties`, `items`, `enum` of strings and the length and range keywords;
`compile_check` turns such a schema into a plain Python predicate. The predicate answers True only
for arguments that the full validator accepts too; False means "not sure", and the full validator
then runs and explains what is wrong. Any other keyword (`$ref`, `pattern`, `oneOf`, ...) makes the
schema unsupported, and the full validator runs every time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

VALIDATION_KEYWORDS = frozenset(
    {
        "$ref",
        "additionalItems",
        "additionalProperties",
        "allOf",
        "anyOf",
        "const",
        "contains",
        "dependencies",
        "else",
        "enum",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "if",
        "items",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "multipleOf",
        "not",
        "oneOf",
        "pattern",
        "patternProperties",
        "properties",
        "propertyNames",
        "required",
        "then",
        "type",
        "uniqueItems",
    }
)
"""Draft-07's assertion and applicator keywords; anything else in a schema is an annotation, ignored."""

SUPPORTED = frozenset(
    {
        "additionalProperties",
        "enum",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "items",
        "maxItems",
        "maxLength",
        "maximum",
        "minItems",
        "minLength",
        "minimum",
        "properties",
        "required",
        "type",
    }
)

TYPES: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int,  # 1.0 is an integer to Draft-07: left to the full validator
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


class Unsupported(Exception):
    pass


def compile_check(schema: Any) -> Check | None:
    """The predicate for `schema`, or None when it uses something the predicate cannot decide."""
    try:
        return _node(schema)
    except Unsupported:
        return None


def _node(schema: Any) -> Check:
    if schema is True:
        return lambda _: True
    if not isinstance(schema, Mapping):
        raise Unsupported
    used = {key for key in schema if key in VALIDATION_KEYWORDS}
    if used - SUPPORTED:
        raise Unsupported
    checks = [check for check in (_type(schema), _number(schema), _string(schema)) if check is not None]
    checks += [check for check in (_array(schema), _object(schema)) if check is not None]
    if "enum" in schema:
        choices = schema["enum"]
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            raise Unsupported
        allowed = frozenset(choices)
        checks.append(lambda v: isinstance(v, str) and v in allowed)
    if not checks:
        return lambda _: True
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _type(schema: Mapping[str, Any]) -> Check | None:
    if "type" not in schema:
        return None
    kinds = schema["type"]
    names = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n in TYPES for n in names):
        raise Unsupported
    tests = [TYPES[n] for n in names]
    if len(tests) == 1:
        return tests[0]
    return lambda v: any(test(v) for test in tests)


def _bound(schema: Mapping[str, Any], key: str) -> int | float | None:
    value = schema.get(key)
    if value is None:
        return None
    if type(value) not in (int, float):
        raise Unsupported
    bound: int | float = value
    return bound


def _number(schema: Mapping[str, Any]) -> Check | None:
    low, high = _bound(schema, "minimum"), _bound(schema, "maximum")
    above, below = _bound(schema, "exclusiveMinimum"), _bound(schema, "exclusiveMaximum")
    if low is None and high is None and above is None and below is None:
        return None

    def check(v: Any) -> bool:
        if type(v) is not int and type(v) is not float:
            return True  # the range keywords apply to numbers only
        return (
            (low is None or v >= low)
            and (high is None or v <= high)
            and (above is None or v > above)
            and (below is None or v < below)
        )

    return check


def _count(schema: Mapping[str, Any], key: str) -> int | None:
    value = schema.get(key)
    if value is None:
        return None
    if type(value) is not int:
        raise Unsupported
    count: int = value
    return count


def _string(schema: Mapping[str, Any]) -> Check | None:
    shortest, longest = _count(schema, "minLength"), _count(schema, "maxLength")
    if shortest is None and longest is None:
        return None
    return lambda v: (
        not isinstance(v, str) or ((shortest is None or len(v) >= shortest) and (longest is None or len(v) <= longest))
    )


def _array(schema: Mapping[str, Any]) -> Check | None:
    fewest, most = _count(schema, "minItems"), _count(schema, "maxItems")
    item = _node(schema["items"]) if "items" in schema else None
    if fewest is None and most is None and item is None:
        return None

    def check(v: Any) -> bool:
        if not isinstance(v, list):
            return True
        if (fewest is not None and len(v) < fewest) or (most is not None and len(v) > most):
            return False
        return item is None or all(item(element) for element in v)

    return check


def _object(schema: Mapping[str, Any]) -> Check | None:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    closed = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or not isinstance(required, list) or not isinstance(closed, bool):
        raise Unsupported
    if not all(isinstance(name, str) for name in required):
        raise Unsupported
    checks = {name: _node(sub) for name, sub in properties.items()}
    needed = tuple(required)
    extra_allowed = closed
    if not checks and not needed and extra_allowed:
        return None

    def check(v: Any) -> bool:
        if not isinstance(v, dict):
            return True
        for name in needed:
            if name not in v:
                return False
        for name, value in v.items():
            test = checks.get(name)
            if test is None:
                if not extra_allowed:
                    return False
            elif not test(value):
                return False
        return True

    return check

"""The quick argument check never accepts what Draft-07 refuses, and accepts the plain cases it is for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from aai_gateway.descriptor.quick_check import compile_check

ROOT = Path(__file__).resolve().parents[2]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False),
    st.sampled_from([1.0, 0.0, -0.0, float("inf"), 2**70]),
    st.sampled_from(["", "a", "ab", "abc", "é", ",", "-"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "c", "x"]), inner, max_size=4)
    ),
    max_leaves=10,
)
kinds = st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"])
bounds = st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False))
counts = st.integers(0, 3)


def node(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(kinds, st.lists(kinds, min_size=1, max_size=3, unique=True)),
            "minimum": bounds,
            "maximum": bounds,
            "exclusiveMinimum": bounds,
            "exclusiveMaximum": bounds,
            "minLength": counts,
            "maxLength": counts,
            "minItems": counts,
            "maxItems": counts,
            "enum": st.lists(st.sampled_from(["", "a", "ab", ",", "é"]), min_size=1, max_size=3),
            "items": children,
            "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3),
            "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True),
            "additionalProperties": st.booleans(),
            "description": st.just("annotations are ignored"),
            "default": values,
        },
    )


schemas: st.SearchStrategy[Any] = st.recursive(st.just({}) | st.just(True), node, max_leaves=6)


@settings(max_examples=1500, deadline=None)
@given(schemas, values)
def test_the_quick_check_accepts_only_what_draft_7_accepts(schema: Any, instance: Any) -> None:
    check = compile_check(schema)
    assert check is not None, schema
    if check(instance):
        assert Draft7Validator(schema).is_valid(instance), (schema, instance)


@settings(max_examples=500, deadline=None)
@given(schemas, values)
def test_plain_values_are_decided_quickly(schema: Any, instance: Any) -> None:
    """Without floats standing in for integers, the quick answer is the full validator's answer."""
    check = compile_check(schema)
    assert check is not None
    if not _has_integral_float(instance):
        assert check(instance) == Draft7Validator(schema).is_valid(instance), (schema, instance)


def _has_integral_float(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, list):
        return any(_has_integral_float(v) for v in value)
    if isinstance(value, dict):
        return any(_has_integral_float(v) for v in value.values())
    return False


def test_other_keywords_leave_the_schema_to_the_full_validator() -> None:
    for schema in (
        {"type": "string", "pattern": "^a"},
        {"$ref": "#/definitions/x"},
        {"properties": {"a": {"oneOf": [{"type": "string"}]}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"enum": [1, "a"]},
        {"type": "strings"},
        {"minimum": True},
        {"items": [{"type": "string"}]},
        False,
    ):
        assert compile_check(schema) is None, schema


def test_the_example_apps_get_the_quick_check() -> None:
    """Most tools of the bundled examples and test apps have plain parameters."""
    found = {True: 0, False: 0}
    for path in [*ROOT.glob("examples/**/aai.json"), *ROOT.glob("tests/apps/**/aai.json")]:
        for schema in _parameters(json.loads(path.read_text())):
            found[compile_check(schema) is not None] += 1
    assert found[True] > 4 * found[False], found


def _parameters(value: Any) -> list[Any]:
    if isinstance(value, dict):
        own = [value["parameters"]] if isinstance(value.get("parameters"), dict) else []
        return own + [p for v in value.values() for p in _parameters(v)]
    if isinstance(value, list):
        return [p for v in value for p in _parameters(v)]
    return []

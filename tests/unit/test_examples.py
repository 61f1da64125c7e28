"""Example arguments: every value valid against its schema, checked strictly, with the formats jsonschema
leaves to optional packages.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator, FormatChecker

from aai_gateway.descriptor.examples import FORMAT_EXAMPLES, example_args
from aai_gateway.descriptor.validate import load
from tests.support import EXAMPLES

STRICT = FormatChecker(Draft7Validator.FORMAT_CHECKER.checkers)
"""Draft 7's format checks, plus the ones jsonschema leaves to optional packages."""


@STRICT.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    return not isinstance(value, str) or ("T" in value and datetime.fromisoformat(value).tzinfo is not None)


@STRICT.checks("time")
def _time(value: object) -> bool:
    return not isinstance(value, str) or re.fullmatch(r"\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", value) is not None


@STRICT.checks("uri")
@STRICT.checks("iri")
def _uri(value: object) -> bool:
    return not isinstance(value, str) or (
        _uri_reference(value) and re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", value) is not None
    )


@STRICT.checks("uri-reference")
@STRICT.checks("iri-reference")
def _uri_reference(value: object) -> bool:
    return not isinstance(value, str) or not re.search(r"\s", value)


@STRICT.checks("uri-template")
def _uri_template(value: object) -> bool:
    plain = re.sub(r"\{[^{}\s]+\}", "x", value) if isinstance(value, str) else ""
    return _uri_reference(plain) and not re.search(r"[{}]", plain)


@STRICT.checks("hostname")
def _hostname(value: object) -> bool:
    label = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    return not isinstance(value, str) or re.fullmatch(rf"{label}(\.{label})*", value) is not None


@STRICT.checks("uuid", raises=ValueError)
def _uuid(value: object) -> bool:
    return not isinstance(value, str) or str(uuid.UUID(value)) == value


DURATION_TIME = r"T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S)"
DURATION = rf"P((\d+Y(\d+M(\d+D)?)?|\d+M(\d+D)?|\d+D)({DURATION_TIME})?|{DURATION_TIME}|\d+W)"
"""RFC 3339, appendix A."""


@STRICT.checks("duration")
def _duration(value: object) -> bool:
    return not isinstance(value, str) or re.fullmatch(DURATION, value) is not None


@STRICT.checks("json-pointer")
def _json_pointer(value: object) -> bool:
    return not isinstance(value, str) or re.fullmatch(r"(/([^/~]|~[01])*)*", value) is not None


@STRICT.checks("relative-json-pointer")
def _relative_json_pointer(value: object) -> bool:
    return not isinstance(value, str) or re.fullmatch(r"(0|[1-9][0-9]*)(#|(/([^/~]|~[01])*)*)", value) is not None


def strict(schema: dict[str, Any]) -> Draft7Validator:
    return Draft7Validator(schema, format_checker=STRICT)


def with_p(spec: dict[str, Any], **root: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"p": spec}, "required": ["p"], **root}


@pytest.mark.parametrize("source", sorted(EXAMPLES.glob("*/aai.json")), ids=lambda p: p.parent.name)
def test_guide_examples_of_bundled_apps_validate_against_their_schemas(source: Path) -> None:
    app = load(source).descriptor
    assert app is not None
    for _, tool in app.tools("linux"):
        strict(dict(tool.parameters)).validate(example_args(tool.parameters))


@pytest.mark.parametrize(
    ("spec", "value"),
    [
        pytest.param({"type": "string"}, "<p>", id="placeholder"),
        pytest.param({"type": "string", "format": "date-time"}, "2024-12-31T15:00:00Z", id="date-time"),
        pytest.param({"type": "string", "format": "date"}, "2024-12-31", id="date"),
        pytest.param({"type": "string", "format": "email"}, "user@example.com", id="email"),
        pytest.param({"type": "string", "format": "uri"}, "https://example.com", id="uri"),
        pytest.param({"type": "string", "pattern": "^[a-z]{3,8}$"}, "aaa", id="pattern"),
        pytest.param({"type": "string", "pattern": "^[0-9]+$"}, "0", id="digits"),
        pytest.param({"type": "string", "pattern": "^[a-z]+$", "minLength": 5}, "aaaaa", id="pattern and length"),
        pytest.param({"type": "string", "pattern": "p"}, "<p>", id="unanchored pattern"),
        pytest.param({"type": "string", "minLength": 6}, "<p>xxx", id="min length"),
        pytest.param({"type": "string", "maxLength": 1}, "p", id="max length"),
        pytest.param({"type": "string", "examples": ["Paris"]}, "Paris", id="examples"),
        pytest.param({"type": "integer", "minimum": 0, "default": -5}, 0, id="invalid default skipped"),
        pytest.param({"type": "integer", "default": 7}, 7, id="default"),
        pytest.param({"type": "integer"}, 1, id="integer"),
        pytest.param({"type": "integer", "exclusiveMinimum": 0}, 1, id="exclusive minimum"),
        pytest.param({"type": "integer", "minimum": 10, "maximum": 20, "multipleOf": 7}, 14, id="multiple of"),
        pytest.param({"type": "integer", "maximum": -3}, -3, id="maximum"),
        pytest.param({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}, 0.5, id="open interval"),
        pytest.param({"type": "boolean"}, True, id="boolean"),
        pytest.param({"enum": ["b", "a"]}, "b", id="enum"),
        pytest.param({"const": 3}, 3, id="const"),
        pytest.param({"type": ["null", "string"]}, "<p>", id="type list prefers non-null"),
        pytest.param(
            {"anyOf": [{"type": "integer", "minimum": 5, "maximum": 1}, {"type": "boolean"}]}, True, id="anyOf"
        ),
        pytest.param({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1.5, id="oneOf"),
        pytest.param({"type": "array", "items": {"type": "string"}}, ["<p>"], id="array"),
        pytest.param({"type": "array", "items": {"type": "string"}, "minItems": 2}, ["<p>", "<p>"], id="min items"),
        pytest.param(
            {"type": "array", "items": {"type": "string"}, "minItems": 3, "uniqueItems": True},
            ["<p>", "p", "<p2>"],
            id="unique items",
        ),
        pytest.param({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}, ["<p>", 1], id="tuple"),
        pytest.param(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"pattern": "^[0-9]{5}$"}},
                "required": ["b"],
            },
            {"b": "00000"},
            id="nested required",
        ),
        pytest.param({"$ref": "#/definitions/zip"}, "00000", id="ref"),
    ],
)
def test_example_value(spec: dict[str, Any], value: Any) -> None:
    schema = with_p(spec, definitions={"zip": {"type": "string", "pattern": "^[0-9]{5}$"}})
    args = example_args(schema)
    assert args == {"p": value}
    strict(schema).validate(args)


def test_example_adds_one_optional_parameter_that_has_examples() -> None:
    schema = {
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "default": 10},
            "query": {"type": "string", "examples": ["invoices 2024"]},
            "sort": {"enum": ["date", "name"], "examples": ["name"]},
            "title": {"type": "string"},
        },
        "required": ["title"],
    }
    assert example_args(schema) == {"title": "<title>", "query": "invoices 2024"}


@pytest.mark.parametrize("fmt", sorted(FORMAT_EXAMPLES))
def test_every_format_example_passes_its_format_check(fmt: str) -> None:
    schema = with_p({"type": "string", "format": fmt})
    assert example_args(schema) == {"p": FORMAT_EXAMPLES[fmt]}
    assert fmt in STRICT.checkers
    strict(schema).validate(example_args(schema))


def test_an_unsupported_pattern_falls_back_to_the_placeholder() -> None:
    # lookaround and backreferences are beyond the linear-time engine: no candidate can be checked
    assert example_args(with_p({"type": "string", "pattern": r"^(?!admin)[a-z]+$"})) == {"p": "<p>"}
    schema = with_p({"type": "string", "pattern": r"^(\w)\1$"})
    assert example_args(schema) == {"p": "<p>"}
    assert not strict(schema).is_valid(example_args(schema))


names = st.from_regex(r"[a-z]{1,8}", fullmatch=True)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-100, 100), st.text(max_size=5))
SIMPLE_PATTERNS = [  # (pattern, shortest match, longest match)
    (r"^[a-z]{3,8}$", 3, 8),
    (r"^[0-9]+$", 1, None),
    (r"^[A-Z][a-z]*$", 1, None),
    (r"^(foo|bar)-\d{2,4}$", 6, 8),
    (r"^#[0-9a-f]{6}$", 7, 7),
    (r"[a-z]", 1, None),
]


@st.composite
def patterned_strings(draw: st.DrawFn) -> dict[str, Any]:
    pattern, shortest, longest = draw(st.sampled_from(SIMPLE_PATTERNS))
    spec: dict[str, Any] = {"type": "string", "pattern": pattern}
    least = draw(st.integers(shortest, longest if longest is not None else shortest + 6))
    if draw(st.booleans()):
        spec["minLength"] = least
    if draw(st.booleans()):
        spec["maxLength"] = draw(st.integers(least, longest if longest is not None else least + 6))
    return spec


@st.composite
def sized_strings(draw: st.DrawFn) -> dict[str, Any]:
    least, most = sorted(draw(st.lists(st.integers(0, 12), min_size=2, max_size=2)))
    return {"type": "string", "minLength": least, "maxLength": most}


@st.composite
def integers(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "integer"}
    step = draw(st.sampled_from([None, 2, 3, 5, 10]))
    low = draw(st.none() | st.integers(-50, 50))
    if step:
        spec["multipleOf"] = step
    if low is not None:
        spec[draw(st.sampled_from(["minimum", "exclusiveMinimum"]))] = low
    if draw(st.booleans()):
        high = (low or 0) + 2 * (step or 1) + 2 + draw(st.integers(0, 20))
        spec[draw(st.sampled_from(["maximum", "exclusiveMaximum"]))] = high
    return spec


@st.composite
def numbers(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "number"}
    step = draw(st.sampled_from([None, 0.5, 0.25, 2.5]))
    low = draw(st.none() | st.integers(-40, 40).map(lambda n: n / 2))
    if step:
        spec["multipleOf"] = step
    if low is not None:
        spec[draw(st.sampled_from(["minimum", "exclusiveMinimum"]))] = low
    if draw(st.booleans()):
        high = (low or 0) + 2 * (step or 1) + 1 + draw(st.integers(0, 20)) / 4
        spec[draw(st.sampled_from(["maximum", "exclusiveMaximum"]))] = high
    return spec


leaves = st.one_of(
    st.sampled_from(["string", "integer", "number", "boolean", "null"]).map(lambda t: {"type": t}),
    st.sampled_from(sorted(FORMAT_EXAMPLES)).map(lambda f: {"type": "string", "format": f}),
    patterned_strings(),
    sized_strings(),
    integers(),
    numbers(),
    st.lists(scalars, min_size=1, max_size=4, unique_by=repr).map(lambda values: {"enum": values}),
    scalars.map(lambda value: {"const": value}),
    st.sampled_from([["string", "null"], ["null", "integer"], ["boolean", "string"]]).map(lambda t: {"type": t}),
    st.sampled_from(["string", "integer"]).map(
        lambda t: {"type": "array", "items": {"type": t}, "uniqueItems": True, "minItems": 3}
    ),
)


@st.composite
def with_extras(draw: st.DrawFn, spec: dict[str, Any]) -> dict[str, Any]:
    """A description, and a default that may not even be valid: the example must not trust it."""
    if draw(st.booleans()):
        spec = {**spec, "description": draw(st.text(max_size=20))}
    if draw(st.integers(0, 3)) == 0:
        spec = {**spec, "default": draw(scalars)}
    return spec


@st.composite
def objects(draw: st.DrawFn, inner: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    props = draw(st.dictionaries(names, inner, max_size=4))
    required = draw(st.lists(st.sampled_from(sorted(props)), unique=True)) if props else []
    return {"type": "object", "properties": props, "required": required}


@st.composite
def arrays(draw: st.DrawFn, inner: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "array", "items": draw(inner), "minItems": draw(st.integers(0, 3))}
    if draw(st.booleans()):
        spec["maxItems"] = spec["minItems"] + draw(st.integers(0, 2))
    return spec


def exclusive(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """`oneOf` branches of different types, so that a value can match exactly one of them."""
    branches = st.tuples(
        st.one_of(patterned_strings(), sized_strings()), integers(), objects(inner), st.just({"type": "null"})
    )
    return st.tuples(branches, st.permutations(range(4)), st.integers(1, 4)).map(
        lambda b: {"oneOf": [b[0][i] for i in b[1][: b[2]]]}
    )


schemas = st.recursive(
    leaves.flatmap(with_extras),
    lambda inner: st.one_of(
        arrays(inner),
        objects(inner),
        st.lists(inner, min_size=1, max_size=3).map(lambda branches: {"anyOf": branches}),
        exclusive(inner),
    ).flatmap(with_extras),
    max_leaves=8,
)


@st.composite
def parameter_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema = draw(objects(schemas))
    definitions = draw(st.dictionaries(names, schemas, max_size=2))
    refs = {f"ref_{name}": {"$ref": f"#/definitions/{name}"} for name in definitions}
    hint = {"type": "string", "examples": [draw(st.text(max_size=8))]}
    props = {**schema["properties"], **refs, **({"hint": hint} if draw(st.booleans()) else {})}
    required = [*schema["required"], *refs]
    return {**schema, "properties": props, "required": required, **({"definitions": definitions} if refs else {})}


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(parameter_schemas())
def test_example_arguments_always_validate(schema: dict[str, Any]) -> None:
    Draft7Validator.check_schema(schema)
    args = example_args(schema)
    strict(schema).validate(args)
    extra = set(args) - set(schema["required"])
    assert extra <= {"hint"}

"""The guide's parameter list: one readable line per parameter, nested fields indented, never raw JSON Schema."""

from __future__ import annotations

from typing import Any

import pytest

from aai_gateway.descriptor.examples import example_args
from aai_gateway.descriptor.parameters import parameter_lines
from tests.unit.test_examples import with_p

ADDRESS = {
    "type": "object",
    "description": "Postal address",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "geo": {
            "type": "object",
            "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
        },
    },
    "required": ["city"],
}


@pytest.mark.parametrize(
    ("spec", "lines"),
    [
        pytest.param({"type": "integer"}, ["- p (integer, required)"], id="plain"),
        pytest.param(
            {"type": "string", "description": "Separator", "enum": [",", " "], "default": ","},
            ['- p (string, required): Separator; one of ",", " "; default ","'],
            id="enum and default",
        ),
        pytest.param(
            {"type": "string", "description": "Text of\n  the note.", "default": ""},
            ['- p (string, required): Text of the note; default ""'],
            id="description on one line",
        ),
        pytest.param({"type": ["string", "null"]}, ["- p (string or null, required)"], id="type list"),
        pytest.param(
            {"type": "string", "format": "date-time", "description": "Due"},
            ["- p (string, date-time, required): Due"],
            id="format",
        ),
        pytest.param({"const": "v1"}, ['- p (string, required): must be "v1"'], id="const"),
        pytest.param(
            {"type": "string", "examples": ["Paris", "Rome", "Oslo"]},
            ['- p (string, required): e.g. "Paris", "Rome"'],
            id="examples",
        ),
        pytest.param(
            {"type": "integer", "minimum": 1, "maximum": 100}, ["- p (integer, required): 1..100"], id="range"
        ),
        pytest.param(
            {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "multipleOf": 0.25},
            ["- p (number, required): more than 0 and at most 1; multiple of 0.25"],
            id="exclusive range",
        ),
        pytest.param(
            {"type": "string", "minLength": 3, "maxLength": 8, "pattern": "^[a-z]+$"},
            ["- p (string, required): 3..8 characters; matches ^[a-z]+$"],
            id="length and pattern",
        ),
        pytest.param(
            {"type": "string", "minLength": 1}, ["- p (string, required): at least 1 character"], id="min length"
        ),
        pytest.param(
            {"type": "array", "items": {"type": "string"}, "minItems": 1},
            ["- p (array of string, required): at least 1 item"],
            id="min items",
        ),
        pytest.param(
            {"type": "array", "items": {"enum": ["mon", "tue"]}, "maxItems": 2, "uniqueItems": True},
            ['- p (array of string, required): at most 2 items; no duplicates; each one of "mon", "tue"'],
            id="array of enum",
        ),
        pytest.param(
            {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            ["- p (one of: string | integer, required)"],
            id="anyOf",
        ),
        pytest.param(
            {"description": "Minutes or a time", "oneOf": [{"type": "integer", "minimum": 1}, {"type": "string"}]},
            [
                "- p (one of: integer | string, required): Minutes or a time",
                "  - option 1 (integer): at least 1",
                "  - option 2 (string)",
            ],
            id="oneOf with constraints",
        ),
        pytest.param(
            ADDRESS,
            [
                "- p (object, required): Postal address",
                "  - city (string, required): City name",
                "  - geo (object, optional)",
                "    - lat (number, required): -90..90",
                "    - lon (number, required)",
            ],
            id="nested object",
        ),
        pytest.param(
            {"type": "array", "minItems": 1, "items": ADDRESS},
            [
                "- p (array of object, required): at least 1 item",
                "  - city (string, required): City name",
                "  - geo (object, optional)",
                "    - lat (number, required): -90..90",
                "    - lon (number, required)",
            ],
            id="array of objects",
        ),
        pytest.param(
            {"anyOf": [{"type": "string"}, ADDRESS]},
            [
                "- p (one of: string | object, required)",
                "  - option 1 (string)",
                "  - option 2 (object): Postal address",
                "    - city (string, required): City name",
                "    - geo (object, optional)",
                "      - lat (number, required): -90..90",
                "      - lon (number, required)",
            ],
            id="anyOf with an object",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": {"type": "string"}},
            ["- p (object with string values, required)"],
            id="map",
        ),
    ],
)
def test_parameter_lines(spec: dict[str, Any], lines: list[str]) -> None:
    assert parameter_lines(with_p(spec)) == lines


def test_parameter_lines_follow_refs_and_stop_at_recursion() -> None:
    node = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/definitions/node"}},
        },
        "required": ["name"],
    }
    schema = with_p({"$ref": "#/definitions/node", "description": "Root of the tree"}, definitions={"node": node})
    assert parameter_lines(schema) == [
        "- p (object, required): Root of the tree",
        "  - name (string, required)",
        "  - children (array of object, optional)",
        "    - same fields as p",
    ]
    assert example_args(schema) == {"p": {"name": "<name>"}}


def test_parameter_lines_list_required_names_from_additional_properties_and_root_refs() -> None:
    schema = {
        "type": "object",
        "properties": {"parent": {"$ref": "#"}},
        "required": ["count"],
        "additionalProperties": {"type": "integer", "minimum": 2},
    }
    assert parameter_lines(schema) == [
        "- parent (object, optional)",
        "  - same fields as the parameters",
        "- count (integer, required): at least 2",
    ]
    assert example_args(schema) == {"count": 2}


def test_parameter_lines_say_which_of_several_parameters_is_needed() -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
        "oneOf": [{"required": ["id"]}, {"required": ["name"]}],
    }
    assert parameter_lines(schema) == [
        "- id (string, optional)",
        "- name (string, optional)",
        "- requires exactly one of: id | name",
    ]
    assert example_args(schema) == {"id": "<id>"}


def test_parameter_lines_merge_all_of() -> None:
    schema = {
        "type": "object",
        "allOf": [
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"a": {"maxLength": 2}, "b": {"type": "integer", "minimum": 10, "multipleOf": 7}}},
        ],
    }
    assert parameter_lines(schema) == [
        "- a (string, required): at most 2 characters",
        "- b (integer, optional): at least 10; multiple of 7",
    ]
    assert example_args(schema) == {"a": "a"}

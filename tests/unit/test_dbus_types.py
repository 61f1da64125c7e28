from __future__ import annotations

from typing import Any

import pytest
from dbus_fast import SignatureType, Variant

from aai_gateway.errors import InvalidParams
from aai_gateway.executors.dbus_types import from_dbus, guess_signature, signature_types, to_dbus


def one(signature: str) -> SignatureType:
    [sig] = signature_types(signature)
    return sig


@pytest.mark.parametrize(
    ("signature", "value", "expected"),
    [
        ("s", "héllo", "héllo"),
        ("b", True, True),
        ("y", 255, 255),
        ("n", -32768, -32768),
        ("q", 65535, 65535),
        ("i", -(2**31), -(2**31)),
        ("u", 2**32 - 1, 2**32 - 1),
        ("x", -(2**63), -(2**63)),
        ("t", 2**64 - 1, 2**64 - 1),
        ("d", 3, 3.0),
        ("i", 7.0, 7),
        ("o", "/org/example", "/org/example"),
        ("as", ["a", "b"], ["a", "b"]),
        ("ay", [1, 2], b"\x01\x02"),
        ("a{ss}", {"k": "v"}, {"k": "v"}),
        ("(si)", ["a", 1], ["a", 1]),
    ],
)
def test_json_values_convert_to_their_dbus_type(signature: str, value: Any, expected: Any) -> None:
    assert to_dbus(value, one(signature), "arg") == expected


@pytest.mark.parametrize(
    ("signature", "value", "message"),
    [
        ("u", -1, "argument 'arg' must be an unsigned 32-bit integer (0..4294967295); got -1"),
        ("i", 2**40, "argument 'arg' must be a 32-bit integer"),
        ("x", 1.5, "argument 'arg' must be a 64-bit integer; got a number (1.5)"),
        ("u", "3", "argument 'arg' must be an unsigned 32-bit integer; got a string"),
        ("b", 1, "argument 'arg' must be a boolean; got a number (1)"),
        ("i", True, "argument 'arg' must be a 32-bit integer; got a boolean (true)"),
        ("s", 5, "argument 'arg' must be a string; got a number (5)"),
        ("s", "a\x00b", "contains a NUL character"),
        ("as", ["a", 1], "argument 'arg[1]' must be a string"),
        ("as", "a", "argument 'arg' must be an array"),
        ("d", float("nan"), "must be a finite number"),
        ("h", 3, "Unix file descriptor"),
    ],
)
def test_values_that_do_not_fit_are_invalid_params_naming_the_argument(
    signature: str, value: Any, message: str
) -> None:
    with pytest.raises(InvalidParams, match=None) as caught:
        to_dbus(value, one(signature), "arg")
    assert message in caught.value.detail


def test_variants_are_chosen_from_the_json_value() -> None:
    converted = to_dbus({"n": 1, "big": 2**40, "f": 0.5, "s": "x", "b": False, "l": ["a"]}, one("a{sv}"), "hints")
    assert {k: v.signature for k, v in converted.items()} == {
        "n": "i",
        "big": "x",
        "f": "d",
        "s": "s",
        "b": "b",
        "l": "as",
    }


def test_replies_convert_back_to_json() -> None:
    assert from_dbus([Variant("s", "a"), b"\x00\xff", ("x", 2**40), {"k": Variant("as", ["v"])}]) == [
        "a",
        [0, 255],
        ["x", 2**40],
        {"k": ["v"]},
    ]


def test_signatures_are_guessed_from_json_schema_when_introspection_is_missing() -> None:
    assert [
        guess_signature(s)
        for s in (
            {"type": "string"},
            {"type": "integer"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "array", "items": {"type": "string"}},
            {"type": "object"},
            {},
        )
    ] == ["s", "x", "d", "b", "as", "a{sv}", "v"]


def test_a_schema_signature_fixes_the_variant_type() -> None:
    schema = {"type": "object", "properties": {"urgency": {"type": "integer", "signature": "y"}}}
    converted = to_dbus({"urgency": 2, "category": "email"}, one("a{sv}"), "hints", schema)
    assert (converted["urgency"].signature, converted["urgency"].value) == ("y", 2)
    assert converted["category"].signature == "s"
    with pytest.raises(InvalidParams, match="must be a byte"):
        to_dbus({"urgency": 300}, one("a{sv}"), "hints", schema)

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aai_gateway.history.recorder import excerpt
from aai_gateway.history.redact import MASK, Redactor, secret_key

R = MASK


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "PASSWORD",
        "Password",
        "db_password",
        "passwd",
        "pass",
        "pwd",
        "token",
        "access_token",
        "refreshToken",
        "ACCESSTOKEN",
        "secret",
        "client_secret",
        "clientSecret",
        "api_key",
        "apiKey",
        "apikey",
        "X-Api-Key",
        "Authorization",
        "proxy-authorization",
        "cookie",
        "Set-Cookie",
        "credentials",
        "private_key",
        "auth",
        "passphrase",
    ],
)
def test_keys_that_look_secret(key: str) -> None:
    assert secret_key(key)


@pytest.mark.parametrize("key", ["text", "name", "author", "passenger_count", "keyboard", "path", "title", "query"])
def test_ordinary_keys(key: str) -> None:
    assert not secret_key(key)


CASES: list[tuple[Any, dict[str, Any] | None, Any]] = [
    ({"text": "hi", "password": "hunter2"}, None, {"text": "hi", "password": R}),
    ({"Authorization": "Bearer abc", "X-API-KEY": 5}, None, {"Authorization": R, "X-API-KEY": R}),
    # nested objects and lists
    (
        {"headers": {"Cookie": "s=1", "Accept": "json"}, "items": [{"token": "t", "n": 1}, "plain"]},
        None,
        {"headers": {"Cookie": R, "Accept": "json"}, "items": [{"token": R, "n": 1}, "plain"]},
    ),
    # a whole object under a secret key goes
    ({"credentials": {"user": "u", "pin": 1234}}, None, {"credentials": R}),
    # schema marks
    (
        {"pin": "1234", "note": "x"},
        {"type": "object", "properties": {"pin": {"type": "string", "x-sensitive": True}}},
        {"pin": R, "note": "x"},
    ),
    (
        {"login": "ada", "code": "s3cret"},
        {"properties": {"code": {"type": "string", "format": "password"}}},
        {"login": "ada", "code": R},
    ),
    # nested schema marks, in objects and in array items
    (
        {"account": {"user": "ada", "pin": "1"}, "cards": [{"cvv": "123", "last4": "4242"}]},
        {
            "properties": {
                "account": {"properties": {"pin": {"x-sensitive": True}}},
                "cards": {"items": {"properties": {"cvv": {"format": "password"}}}},
            }
        },
        {"account": {"user": "ada", "pin": R}, "cards": [{"cvv": R, "last4": "4242"}]},
    ),
    # a sensitive array: the whole value goes
    ({"otps": ["1", "2"]}, {"properties": {"otps": {"type": "array", "x-sensitive": True}}}, {"otps": R}),
    # positional items, $ref, allOf/anyOf, additionalProperties and patternProperties
    (
        {"pair": ["user", "pw"]},
        {"properties": {"pair": {"items": [{"type": "string"}, {"x-sensitive": True}]}}},
        {"pair": ["user", R]},
    ),
    (
        {"pin": "1", "other": "2"},
        {"properties": {"pin": {"$ref": "#/definitions/hidden"}}, "definitions": {"hidden": {"x-sensitive": True}}},
        {"pin": R, "other": "2"},
    ),
    (
        {"pin": "1", "x": 2},
        {"allOf": [{"properties": {"x": {"type": "integer"}}}, {"properties": {"pin": {"x-sensitive": True}}}]},
        {"pin": R, "x": 2},
    ),
    (
        {"vault": {"a": "1", "b": "2"}},
        {"properties": {"vault": {"additionalProperties": {"x-sensitive": True}}}},
        {"vault": {"a": R, "b": R}},
    ),
    (
        {"env": {"DB_PIN": "1", "HOME": "/h"}},
        {"properties": {"env": {"patternProperties": {"_PIN$": {"x-sensitive": True}}}}},
        {"env": {"DB_PIN": R, "HOME": "/h"}},
    ),
    # "x-sensitive": false and other formats keep the value
    (
        {"pin": "1", "mail": "a@b.c"},
        {"properties": {"pin": {"x-sensitive": False}, "mail": {"format": "email"}}},
        {"pin": "1", "mail": "a@b.c"},
    ),
    # scalars and non-objects pass through
    ([1, "two", None, True], None, [1, "two", None, True]),
    ("just text", None, "just text"),
]


@pytest.mark.parametrize(("value", "schema", "expected"), CASES)
def test_redaction_table(value: Any, schema: dict[str, Any] | None, expected: Any) -> None:
    assert Redactor().value(value, schema) == expected


def test_input_is_not_changed() -> None:
    value = {"password": "x", "list": [{"token": "y"}]}
    Redactor().value(value)
    assert value == {"password": "x", "list": [{"token": "y"}]}


def test_cyclic_refs_end() -> None:
    schema = {"$ref": "#/definitions/node", "definitions": {"node": {"properties": {"next": {"$ref": "#"}}}}}
    deep = {"next": {"next": {"next": {"password": "x"}}}}
    assert Redactor().value(deep, schema) == {"next": {"next": {"next": {"password": R}}}}


def test_known_secrets_are_cut_out_of_any_text() -> None:
    redactor = Redactor(["s3cr3t-value", "abc"])
    assert redactor.text("token s3cr3t-value refused") == f"token {R} refused"
    assert redactor.value({"note": "xs3cr3t-valuex", "n": ["s3cr3t-value"]}) == {"note": f"x{R}x", "n": [R]}
    assert redactor.text("abc stays: too short to mask safely") == "abc stays: too short to mask safely"


def test_long_strings_are_shortened() -> None:
    out = Redactor(max_string=10).value({"text": "x" * 25})
    assert out == {"text": "x" * 10 + "…(+15 characters)"}


def test_an_excerpt_is_the_json_text_cut_at_its_limit() -> None:
    assert excerpt({"a": 1}) == ('{"a": 1}', False)
    text, truncated = excerpt(list(range(10_000)), limit=50)
    assert truncated
    assert len(text) == 50
    assert text.startswith("[0, 1, 2")


@given(st.text(max_size=60), st.integers(1, 80))
def test_a_string_excerpt_is_its_json_text_cut(value: str, limit: int) -> None:
    whole = json.dumps(value, ensure_ascii=False)
    assert excerpt(value, limit) == (whole[:limit], len(whole) > limit)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_no_value_under_a_secret_key_survives(value: Any) -> None:
    wrapped = {"data": value, "api_key": value, "nested": [{"Password": value}]}
    out = Redactor().value(wrapped)
    assert out["api_key"] == R
    assert out["nested"][0]["Password"] == R
    json.dumps(out)  # still JSON

    def secrets_left(node: Any) -> bool:
        if isinstance(node, dict):
            return any((secret_key(k) and v != R) or secrets_left(v) for k, v in node.items())
        if isinstance(node, list):
            return any(secrets_left(v) for v in node)
        return False

    assert not secrets_left(out)


def test_masked_values_are_reported_for_cutting_out_of_results() -> None:
    hidden: list[str] = []
    schema = {"properties": {"pin": {"x-sensitive": True}}}
    out = Redactor().value({"pin": "4711-2", "auth": {"user": "ada", "n": 3}, "text": "x"}, schema, hidden=hidden)
    assert out == {"pin": R, "auth": R, "text": "x"}
    assert sorted(hidden) == ["4711-2", "ada"]
    assert Redactor().also(hidden).text("your pin 4711-2 is wrong") == f"your pin {R} is wrong"


@pytest.mark.parametrize(("value", "schema", "expected"), CASES)
def test_the_same_schema_again_redacts_the_same(value: Any, schema: dict[str, Any] | None, expected: Any) -> None:
    """What is worked out for a schema once is kept: a second and third call with the same schema object, and
    one with an equal copy (a new object), all give the first answer."""
    redactor = Redactor()
    first = redactor.value(value, schema)
    again = [redactor.value(value, schema), redactor.value(value, schema)]
    copy = redactor.value(value, json.loads(json.dumps(schema)))
    assert first == expected
    assert again == [expected, expected]
    assert copy == expected


def test_an_index_and_a_key_that_look_alike_keep_their_own_plans() -> None:
    """Index 1 of an array and key `1` (or `True`, the same dict key as `1`) of an object are told apart."""
    schema = {
        "prefixItems": [{"type": "string"}, {"format": "password"}],
        "properties": {"True": {"format": "password"}},
    }
    redactor = Redactor()
    for _ in range(2):
        assert redactor.value(["a", "b"], schema) == ["a", R]
        assert redactor.value({1: "y"}, schema) == {"1": "y"}
        assert redactor.value({True: "x"}, schema) == {"True": R}

"""`${…}` templates: JMESPath over JSON, typed when whole, text when inside a string."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aai_gateway.expressions import MAX_DEPTH, ExpressionError, check, compiled, heads, render

CONTEXT = {"inputs": {"n": 3}, "steps": {"read": {"result": {"title": "Song", "artists": ["A", "B"]}}}}


def test_a_whole_query_keeps_its_type_and_a_part_becomes_text() -> None:
    template = {"n": "${inputs.n}", "line": "Now: ${steps.read.result.title} by ${steps.read.result.artists}"}
    assert render(template, CONTEXT) == {"n": 3, "line": 'Now: Song by ["A", "B"]'}
    assert render("$${kept}", CONTEXT) == "${kept}"
    assert render("${steps.missing.result}", CONTEXT) is None


def test_braces_and_quotes_inside_a_query() -> None:
    assert render("${{t: steps.read.result.title}}", CONTEXT) == {"t": "Song"}
    assert render("${'}'}", CONTEXT) == "}"


@pytest.mark.hostile("validation")
@pytest.mark.parametrize(
    ("template", "said"),
    [
        ("${steps.(}", "is not a JMESPath query"),
        ("${steps", "has no closing"),
        ("${}", "is empty"),
        ("${" + "a." * 600 + "b}", "may hold 1000 characters"),
        ("${__import__('os').system('id')}", "which JMESPath does not have"),
    ],
)
def test_bad_queries_say_where_and_why(template: str, said: str) -> None:
    with pytest.raises(ExpressionError, match=r"^args\.x: ") as caught:
        list(check({"x": template}, "args"))
    assert said in str(caught.value)


@pytest.mark.hostile("validation")
def test_deep_templates_are_refused() -> None:
    deep: object = "${inputs.n}"
    for _ in range(MAX_DEPTH + 2):
        deep = [deep]
    with pytest.raises(ExpressionError, match="nested deeper"):
        list(check(deep, "args"))


def test_heads_name_what_a_query_reads_from_the_top() -> None:
    def read(source: str) -> list[tuple[str, ...]]:
        return list(heads(compiled(source)))

    assert read("steps.a.result[?x == `1`].y | [0]") == [("steps", "a", "result")]
    assert read("{a: steps.c.result, b: inputs.x}") == [("steps", "c", "result"), ("inputs", "x")]
    assert read('length(steps."my-id".result)') == [("steps", "my-id", "result")]


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c, max_size=3)))
def test_a_template_without_queries_is_its_own_value(value: object) -> None:
    if isinstance(value, str) and "${" in value:
        return
    if isinstance(value, list) and "${" in repr(value):
        return
    assert render(value, CONTEXT) == value

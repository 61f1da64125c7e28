"""Regular expressions of hostile schemas run in linear time, and agree with `re` where both run them."""

from __future__ import annotations

import re
import time
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from aai_gateway.descriptor import argument_check
from aai_gateway.descriptor.argument_check import ArgumentCheck, result_problem
from aai_gateway.descriptor.regexes import MAX_COST, Refused, Regex, TooCostly, compile_regex, regex_problem
from aai_gateway.descriptor.safe_schema import SAFE_META, SafeValidator, TooSlow, deadline, matches
from aai_gateway.errors import AaiJsonInvalid, InvalidParams

EVIL = "^(a+)+$"
HOSTILE_TEXT = "a" * 34 + "!"


@pytest.mark.parametrize(
    ("pattern", "kind", "reason"),
    [
        ("^[a-z]+$", "runs", None),
        (EVIL, "runs", None),
        (r"\u00e9", "runs", None),  # ECMA-262's escape, as RE2 spells it
        (r"(?P<name>x)", "runs", None),
        (r"(?<name>x)", "runs", None),
        ("((", "invalid", "missing )"),
        ("[", "invalid", "unterminated character set"),
        (r"\1(a)", "invalid", "invalid group reference"),
        ("a" * 9000, "invalid", "longer than 8192"),
        ("(?=a)a", "usable", "lookaround"),
        ("(?<!a)b", "usable", "lookaround"),
        (r"(a)\1", "usable", "a backreference"),
        ("a{1001}", "usable", "a feature RE2 lacks"),
    ],
)
def test_patterns_are_run_refused_or_left_to_the_app(pattern: str, kind: str, reason: str | None) -> None:
    found = compile_regex(pattern)
    if kind == "runs":
        assert isinstance(found, Regex)
        return
    assert isinstance(found, Refused)
    assert found.usable is (kind == "usable")
    assert reason is not None
    assert reason in found.reason
    assert (regex_problem(pattern) is None) is found.usable


@pytest.mark.hostile("mcp-server")
def test_a_backtracking_pattern_answers_at_once() -> None:
    regex = compile_regex(EVIL)
    assert isinstance(regex, Regex)
    started = time.monotonic()
    assert not regex.search(HOSTILE_TEXT)
    assert not regex.search("a" * 100_000 + "!")
    assert time.monotonic() - started < 5  # re takes minutes for the first alone


@pytest.mark.hostile("mcp-server")
def test_a_match_too_costly_for_its_pattern_is_refused() -> None:
    regex = compile_regex("(.*a){1000}")
    assert isinstance(regex, Regex)
    text = "b" * (MAX_COST // regex.size + 1)
    with pytest.raises(TooCostly, match="too long"):
        regex.search(text)
    assert matches("(.*a){1000}", text) is None
    assert matches("(?=a)", "a") is None


simple = st.sampled_from(
    [r"^[a-z]{2,4}$", r"[0-9]+", r"^(foo|bar)-\d{2}$", r"^/org/[A-Za-z0-9_]+$", r"a.c", r"^\s*$", r"x|y", EVIL]
)
texts = st.text(alphabet="abcfoxyr/-0123 \n", max_size=12)


@given(simple, texts)
@settings(max_examples=300, deadline=None)
def test_linear_time_search_agrees_with_re(pattern: str, text: str) -> None:
    assert matches(pattern, text) is (re.search(pattern, text) is not None) or (
        text.endswith("\n") and "$" in pattern  # `$` before a final newline: re's reading, not ECMA-262's nor RE2's
    )


SCHEMAS: list[dict[str, Any]] = [
    {"type": "string", "pattern": "^[a-z]+$"},
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}}},
    {"type": "object", "patternProperties": {"^x": {}}, "additionalProperties": False},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
    {"type": "object", "propertyNames": {"pattern": "^[a-z]$"}},
]
instances = st.one_of(
    st.text(alphabet="abzX1", max_size=4),
    st.dictionaries(st.sampled_from(["a", "b", "x", "xy", "A"]), st.one_of(st.integers(), st.text(max_size=2))),
)


@given(st.sampled_from(SCHEMAS), instances)
@settings(max_examples=300, deadline=None)
def test_the_safe_validator_agrees_with_draft_7(schema: dict[str, Any], instance: Any) -> None:
    assert SafeValidator(schema).is_valid(instance) == Draft7Validator(schema).is_valid(instance)


@pytest.mark.hostile("mcp-server")
@pytest.mark.parametrize(
    ("schema", "args", "refused"),
    [
        ({"properties": {"a": {"type": "string", "pattern": EVIL}}}, {"a": HOSTILE_TEXT}, True),
        ({"patternProperties": {EVIL: {}}, "additionalProperties": False}, {HOSTILE_TEXT: 1}, True),
        ({"propertyNames": {"pattern": EVIL}}, {HOSTILE_TEXT: 1}, True),
        ({"patternProperties": {EVIL: {"type": "string"}}}, {HOSTILE_TEXT: 1}, False),
        # formats are annotations when arguments are checked (Draft-07's default)
        ({"properties": {"a": {"type": "string", "format": "regex"}}}, {"a": "(" * 50_000}, False),
    ],
)
def test_hostile_patterns_are_checked_in_time(schema: dict[str, Any], args: dict[str, Any], refused: bool) -> None:
    check = ArgumentCheck("t", {"type": "object", **schema})
    started = time.monotonic()
    if refused:
        with pytest.raises(InvalidParams):
            anyio.run(check.run, args)
    else:
        anyio.run(check.run, args)
    assert time.monotonic() - started < 5


@pytest.mark.hostile("mcp-server")
def test_a_format_regex_is_compiled_by_re2() -> None:
    validator = SafeValidator({"format": "regex"}, format_checker=SafeValidator.FORMAT_CHECKER)
    assert not validator.is_valid("((")
    assert validator.is_valid(EVIL)
    assert validator.is_valid("(?=a)")


def test_the_metaschema_reads_patterns_with_re2() -> None:
    assert not SAFE_META.is_valid({"pattern": "(("})
    assert SAFE_META.is_valid({"pattern": "(?=a)a"})
    assert SAFE_META.is_valid({"pattern": EVIL})


def test_a_broken_pattern_is_the_schemas_fault() -> None:
    check = ArgumentCheck("t", {"type": "object", "properties": {"a": {"type": "string", "pattern": "(("}}})
    with pytest.raises(AaiJsonInvalid, match="tool 't' is broken: the pattern '\\(\\(' is not a valid"):
        anyio.run(check.run, {"a": "x"})


def test_a_keyword_after_the_deadline_stops_the_check() -> None:
    with deadline(-1), pytest.raises(TooSlow):
        SafeValidator({"type": "string"}).is_valid("x")
    assert SafeValidator({"type": "string"}).is_valid("x")


def test_a_long_check_goes_on_off_the_loop_and_gives_up_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "pattern": "^a"}}}}
    check = ArgumentCheck("t", schema)
    many = {"a": ["a"] * 20_000}
    ticks = 0

    async def ticking() -> None:
        nonlocal ticks
        async with anyio.create_task_group() as group:

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await anyio.sleep(0.01)
                    ticks += 1

            group.start_soon(tick)
            await check.run(many)
            group.cancel_scope.cancel()

    anyio.run(ticking)
    assert ticks > 0  # the loop went on while the check ran in its thread
    monkeypatch.setattr(argument_check, "CHECK_SECONDS", 0.01)
    with pytest.raises(InvalidParams, match=r"could not be checked .* within 0\.01 s"):
        anyio.run(check.run, many)


@pytest.mark.hostile("mcp-server")
@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ({"content": [], "structuredContent": {"a": "aaa"}}, None),
        ({"content": [], "structuredContent": {"a": HOSTILE_TEXT}}, "structuredContent.a: "),
        ({"content": [], "structuredContent": {"a": 1}}, "structuredContent.a: must be a string"),
        ({"content": []}, "returned no structuredContent"),
        ({"content": [], "isError": True}, None),
    ],
)
def test_results_are_checked_against_the_output_schema(result: dict[str, Any], problem: str | None) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": EVIL}}}
    found = result_problem(schema, result)
    assert found is None if problem is None else problem in (found or "")

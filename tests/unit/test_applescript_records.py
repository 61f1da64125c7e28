from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aai_gateway.executors.applescript import real_text
from aai_gateway.executors.applescript_records import parse_record


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{subject:"Hi", |odd key|:3, nested:{a:{1, 2.5, true}}}',
            {"subject": "Hi", "odd key": 3, "nested": {"a": [1, 2.5, True]}},
        ),
        ("{1, 2}", [1, 2]),
        ("{}", []),
        ("{a:{}}", {"a": []}),
        ("{{}, {1, {2}}}", [[], [1, [2]]]),
        ('"plain"', "plain"),
        (r'"q\"uote \\ back\nnl\ttab\rcr"', 'q"uote \\ back\nnl\ttab\rcr'),
        ('"raw\nnewline"', "raw\nnewline"),
        ('"{not: a record}"', "{not: a record}"),
        ("42", 42),
        ("-7", -7),
        ("2.5", 2.5),
        ("-0.5", -0.5),
        ("1.0E+12", 1.0e12),
        ("-2.5E-7", -2.5e-7),
        ("true", True),
        ("false", False),
        ("missing value", None),
        ("null", None),
        ("", None),
        ("  {1}\n", [1]),
        ('date "Monday, 1 January 2024 at 10:00:00"', 'date "Monday, 1 January 2024 at 10:00:00"'),
        ('application "Mail"', 'application "Mail"'),
        ("«class xyz»", "«class xyz»"),
        ('alias "Mac:Users:"', 'alias "Mac:Users:"'),
        ("current application", "current application"),
        (
            '{when:date "Monday, 1 January 2024 at 10:00:00", app:application "Mail", f:alias "Mac:Users:"}',
            {
                "when": 'date "Monday, 1 January 2024 at 10:00:00"',
                "app": 'application "Mail"',
                "f": 'alias "Mac:Users:"',
            },
        ),
        (
            '{class:outgoing message, date sent:date "Mon", read status:false, «class abcd»:1}',
            {"class": "outgoing message", "date sent": 'date "Mon"', "read status": False, "«class abcd»": 1},
        ),
        (r'{|a\|b|:1, |x\\y|:2, |with space|:"v", |:colon|:3}', {"a|b": 1, "x\\y": 2, "with space": "v", ":colon": 3}),
        (
            '{message id 5 of mailbox "INBOX" of application "Mail", 3}',
            ['message id 5 of mailbox "INBOX" of application "Mail"', 3],
        ),
        ("{(1 + 2), {1} & {2}}", ["(1 + 2)", "{1} & {2}"]),
        ("{a:1, a:2}", {"a": 2}),
    ],
)
def test_osascript_source_form_becomes_json(text: str, expected: Any) -> None:
    result = parse_record(text)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{1, 2", "'{' is never closed at offset 5 (line 1, column 6)"),
        ('{"abc}', "a text is never closed at offset 1 (line 1, column 2)"),
        ("{|abc}", "a |label| is never closed at offset 1"),
        ("{«class abc}", "a «raw code» is never closed at offset 1"),
        ("{a:1, 2}", "a list item among the labelled items of a record at offset 6"),
        ("1}", "unexpected '}' at offset 1"),
        ("{1)}", "unexpected ')' at offset 2"),
        ("{1,, 2}", "an empty item at offset 3"),
        ("{1, }", "an empty item at offset 4"),
        ("{a:}", "no value after the label 'a' at offset 2"),
        ("{:1}", "a record label is missing at offset 1"),
        ('"bad \\q escape"', "unknown escape \\q in a text at offset 5"),
        ("{1,\n  {2", "'{' is never closed at offset 8 (line 2, column 5)"),
    ],
)
def test_malformed_text_is_a_value_error_with_its_position(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_record(text)


# -- round trip: JSON-ish values printed the way `osascript -s s` prints them, parsed back ---------------------------


def printed(value: Any, escape_controls: bool) -> str:
    """A small AppleScript source-form printer (labels that are not plain identifiers go between bars)."""
    if value is None:
        return "missing value"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return real_text(value)
    if isinstance(value, str):
        text = value.replace("\\", "\\\\").replace('"', '\\"')
        if escape_controls:
            text = text.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
        return f'"{text}"'
    if isinstance(value, list):
        return "{" + ", ".join(printed(v, escape_controls) for v in value) + "}"
    items = []
    for key, item in value.items():
        label = key if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", key) else "|" + re.sub(r"([|\\])", r"\\\1", key) + "|"
        items.append(f"{label}:{printed(item, escape_controls)}")
    return "{" + ", ".join(items) + "}"


KEYS = st.one_of(st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True), st.text(min_size=1, max_size=6))
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, min_size=1, max_size=4),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=300)
@given(VALUES, st.booleans())
def test_printed_values_parse_back(value: Any, escape_controls: bool) -> None:
    text = printed(value, escape_controls)
    assert same(parse_record(text), value), text

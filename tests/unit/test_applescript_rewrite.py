from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aai_gateway import templates
from aai_gateway.errors import InvalidParams, ScriptParseError
from aai_gateway.executors.applescript import DECODER, Prepared, Slot, encode, prepare, real_text, text_of
from aai_gateway.executors.applescript_tokens import tokenize

SEED = Path(__file__).parents[1] / "golden" / "seeds" / "seed003-mail-multi.json"
MAIL_TOOLS = {t["name"]: t for t in json.loads(SEED.read_text())["platforms"]["macos"]["tools"]}
SEND = MAIL_TOOLS["send_email"]

ANY = {"x": {}, "a": {}, "b": {}, "n": {"type": "integer"}, "s": {"type": "string"}}


def schema(properties: Mapping[str, Any] = ANY) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties)}


def body(prepared: Prepared) -> str:
    """The template as rewritten, between `script aai_template` and `end script`."""
    start = prepared.source.index("script aai_template\n") + len("script aai_template\n")
    return prepared.source[start : prepared.source.rindex("end script\n")]


@pytest.mark.parametrize(
    ("template", "rewritten", "slots"),
    [
        ('say "${s}"', "say |aai_text_s|", [("s", "text")]),
        ('say "Re: ${s}!"', 'say ("Re: " & |aai_text_s| & "!")', [("s", "text")]),
        (r'say "a\"${x}\"b"', r'say ("a\"" & |aai_text_x| & "\"b")', [("x", "text")]),
        (r'"\\${x}\n"', r'("\\" & |aai_text_x| & "\n")', [("x", "text")]),
        ('"${a}${b}"', "(|aai_text_a| & |aai_text_b|)", [("a", "text"), ("b", "text")]),
        ('"${a} and ${a}"', '(|aai_text_a| & " and " & |aai_text_a|)', [("a", "text")]),
        ('"multi\n${x}\nline"', '("multi\n" & |aai_text_x| & "\nline")', [("x", "text")]),
        ('"no placeholder" & "${"', '"no placeholder" & "${"', []),
        ("repeat ${n} times", "repeat |aai_value_n| times", [("n", "value")]),
        ("{${a}, ${b}}", "{|aai_value_a|, |aai_value_b|}", [("a", "value"), ("b", "value")]),
        ('{${s}, "${s}"}', "{|aai_value_s|, |aai_text_s|}", [("s", "text"), ("s", "value")]),
        ("beep -- ${x}\n", "beep -- ${x}\n", []),
        ("beep # ${x}", "beep # ${x}\n", []),
        ('(* "${x}" ${x} *) beep', '(* "${x}" ${x} *) beep\n', []),
        ("«class prop» of ${x}", "«class prop» of |aai_value_x|", [("x", "value")]),
        ("|odd name| & ${x}", "|odd name| & |aai_value_x|", [("x", "value")]),
        ("on run\n  return ${n}\nend run", "on run\n  return |aai_value_n|\nend run", [("n", "value")]),
        ("set x to ¬\n  ${n}", "set x to ¬\n  |aai_value_n|", [("n", "value")]),
    ],
)
def test_placeholders_become_variables_by_where_they_sit(
    template: str, rewritten: str, slots: list[tuple[str, str]]
) -> None:
    prepared = prepare(template, schema())
    assert body(prepared) == rewritten + ("" if rewritten.endswith("\n") else "\n")
    assert [(s.name, s.kind) for s in prepared.slots] == slots


def test_parameter_names_keep_dots_and_dashes_and_never_share_a_variable_by_case() -> None:
    prepared = prepare(
        '"${user.name}" & "${Subject}" & "${subject}" & "${x-y}"',
        schema({"user.name": {}, "Subject": {}, "subject": {}, "x-y": {}}),
    )
    assert [s.variable for s in prepared.slots] == [
        "|aai_text_user.name|",
        "|aai_text_Subject|",
        "|aai_text_subject_2|",
        "|aai_text_x-y|",
    ]


def test_the_generated_script_binds_argv_then_runs_the_template_as_a_script_object() -> None:
    prepared = prepare('display dialog "Hi ${s}" giving up after ${n}', schema())
    assert prepared.source == (
        "global |aai_text_s|, |aai_value_n|\n"
        "\n"
        "on run argv\n"
        "\tset |aai_text_s| to item 1 of argv\n"
        "\tset aai_next to 2\n"
        "\tset {|aai_value_n|, aai_next} to aai_decode(argv, aai_next)\n"
        "\treturn run aai_template\n"
        "end run\n"
        "\n"
        f"{DECODER}\n"
        "script aai_template\n"
        'display dialog ("Hi " & |aai_text_s|) giving up after |aai_value_n|\n'
        "end script\n"
    )
    assert prepared.slots == (
        Slot("s", "text", "|aai_text_s|"),
        Slot("n", "value", "|aai_value_n|"),
    )


def test_a_template_without_placeholders_runs_unchanged() -> None:
    prepared = prepare('tell application "Finder" to activate', schema())
    assert prepared.source == (
        "on run\n\treturn run aai_template\nend run\n\n"
        'script aai_template\ntell application "Finder" to activate\nend script\n'
    )
    assert prepared.argv({}) == []


def test_the_mail_seed_send_email_rewrite() -> None:
    prepared = prepare(SEND["script"], SEND["parameters"])
    assert prepared.source == (
        "global |aai_text_subject|, |aai_text_body|, |aai_text_to|\n"
        "\n"
        "on run argv\n"
        "\tset |aai_text_subject| to item 1 of argv\n"
        "\tset |aai_text_body| to item 2 of argv\n"
        "\tset |aai_text_to| to item 3 of argv\n"
        "\treturn run aai_template\n"
        "end run\n"
        "\n"
        "script aai_template\n"
        'tell application "Mail"\n'
        "  set newMessage to make new outgoing message with properties "
        "{subject:|aai_text_subject|, content:|aai_text_body|, visible:false}\n"
        "  tell newMessage\n"
        "    make new to recipient at beginning of to recipients with properties {address:|aai_text_to|}\n"
        "    send\n"
        "  end tell\n"
        "end tell\n"
        'return "{\\"success\\":true, \\"message_id\\":\\"generated\\"}"\n'
        "end script\n"
    )
    args = {"to": "ada@example.org", "subject": 'Re: "hi"', "body": "line 1\nline 2"}
    assert prepared.argv(args) == ['Re: "hi"', "line 1\nline 2", "ada@example.org"]


def test_the_mail_seed_search_emails_rewrite() -> None:
    tool = MAIL_TOOLS["search_emails"]
    prepared = prepare(tool["script"], tool["parameters"])
    assert "set results to (messages whose subject contains |aai_text_query|)\n" in body(prepared)
    assert [s.variable for s in prepared.slots] == ["|aai_text_query|"]
    assert prepared.argv({"query": '" & (do shell script "id") & "'}) == ['" & (do shell script "id") & "']


def test_leading_use_statements_move_to_the_top_of_the_script() -> None:
    template = (
        "-- needs Foundation\n"
        'use AppleScript version "2.4"\n'
        "use framework ¬\n"
        '  "Foundation" -- continued\n'
        "use scripting additions\n"
        "return current application's NSString's stringWithString:\"${s}\""
    )
    prepared = prepare(template, schema())
    assert prepared.source.startswith(
        '-- needs Foundation\nuse AppleScript version "2.4"\nuse framework ¬\n  "Foundation" -- continued\n'
        "use scripting additions\nglobal |aai_text_s|\n"
    )
    assert body(prepared) == "return current application's NSString's stringWithString:|aai_text_s|\n"


def test_a_use_statement_is_only_hoisted_from_the_start() -> None:
    prepared = prepare('beep\nuse scripting additions\nsay "${s}"', schema())
    assert body(prepared) == "beep\nuse scripting additions\nsay |aai_text_s|\n"
    assert prepared.source.startswith("global")


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("get «class ${x}»", "the placeholder ${x} at 1:12 is inside a «raw code»"),
        ("set |a ${x}| to 1", "the placeholder ${x} at 1:8 is inside a |identifier|"),
        (
            'beep\n  say "${nme}"',
            "the placeholder ${nme} at 2:8 is not a parameter of this tool; parameters are: a, b, n, s, x",
        ),
        ("${nme}", "the placeholder ${nme} at 1:1 is not a parameter of this tool; parameters are: a, b, n, s, x"),
        ('use script "${x}"\nbeep', "the placeholder ${x} at 1:13 is inside a use statement"),
        (
            "use scripting additions\r\nproperty p : ${x}",
            "the placeholder ${x} at 2:14 is in a property's initial value",
        ),
        ('  prop greeting : "Hi ${x}"', "is in a property's initial value"),
        ("set aai_x to 1", "the template uses a name starting with 'aai_' at 1:5"),
        ("set |AAI_text_x| to 1", "names starting with aai_ are reserved"),
        ("say “${x}”", "curly quote “ at 1:5 outside a text literal"),
        ('say "unterminated ${x}', "unterminated string literal starting at 1:5"),
    ],
)
def test_templates_that_cannot_be_rewritten_safely_are_script_parse_errors(template: str, message: str) -> None:
    with pytest.raises(ScriptParseError) as caught:
        prepare(template, schema())
    assert message in caught.value.detail


def test_unknown_placeholders_are_reported_for_a_tool_without_parameters() -> None:
    with pytest.raises(ScriptParseError, match=r"parameters are: \(none\)"):
        prepare('say "${x}"', {"type": "object"})


def test_a_multi_line_literal_is_read_from_its_opening_quote() -> None:
    assert body(prepare('say "first\nproperty ${s}"', schema())) == 'say ("first\nproperty " & |aai_text_s|)\n'


def test_prepared_scripts_compare_and_hash_by_their_text() -> None:
    properties = {"n": {"default": [1]}}
    assert hash(prepare("${n}", schema(properties))) == hash(prepare("${n}", schema(properties)))


def test_names_that_merely_contain_aai_are_the_templates_own() -> None:
    assert body(prepare('set kaai_x to "aai_ in text" -- aai_ in a comment', schema())).startswith("set kaai_x")


@pytest.mark.parametrize(
    ("value", "items"),
    [
        ("text", ["s", "text"]),
        ("", ["s", ""]),
        (7, ["i", "7"]),
        (-(2**29), ["i", "-536870912"]),
        (2**29, ["r", "536870912.0"]),
        (10**20, ["r", "1.0E+20"]),
        (2.5, ["r", "2.5"]),
        (-1e-7, ["r", "-1.0E-7"]),
        (1.5e300, ["r", "1.5E+300"]),
        (True, ["b", "true"]),
        (False, ["b", "false"]),
        (None, ["n"]),
        ([], ["l", "0"]),
        ([1, ["a", None], True], ["l", "3", "i", "1", "l", "2", "s", "a", "n", "b", "true"]),
        ({"k": [1, "é"]}, ["j", '{"k": [1, "é"]}']),
    ],
)
def test_values_are_encoded_as_kind_tags_and_text(value: Any, items: list[str]) -> None:
    assert encode(value, "x") == items


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        (None, ""),
        (3, "3"),
        (2.5, "2.5"),
        (True, "true"),
        ([1, "a"], '[1, "a"]'),
        ({"k": "é"}, '{"k": "é"}'),
    ],
)
def test_values_inside_text_read_as_their_text(value: Any, text: str) -> None:
    assert text_of(value) == text


def test_real_text_is_written_the_way_applescript_writes_reals() -> None:
    assert [real_text(v) for v in (0.1, 100.0, 1e16, 1.5e-7, -2e-300)] == [
        "0.1",
        "100.0",
        "1.0E+16",
        "1.5E-7",
        "-2.0E-300",
    ]


def test_absent_arguments_take_the_schema_default_or_null() -> None:
    properties = {"s": {"type": "string"}, "n": {"type": "integer", "default": 5}, "t": {"default": "dflt"}}
    prepared = prepare('say "${s}" & "${t}"\nrepeat ${n} times\n${s}', schema(properties))
    assert [(s.name, s.kind) for s in prepared.slots] == [("s", "text"), ("t", "text"), ("n", "value"), ("s", "value")]
    assert prepared.argv({}) == ["", "dflt", "i", "5", "n"]
    assert prepared.argv({"s": None, "t": "given", "n": 1}) == ["", "given", "i", "1", "n"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"s": "a\x00b"}, "argument 's' contains a NUL character"),
        ({"n": ["ok", "a\x00"]}, "argument 'n' contains a NUL character"),
        ({"s": "\ud800"}, "argument 's' contains an unpaired surrogate"),
        ({"n": math.nan}, "argument 'n' must be a finite number"),
        ({"n": [1, math.inf]}, "argument 'n[1]' must be a finite number"),
        ({"n": 10**400}, "argument 'n' is too large a number for AppleScript"),
        ({"n": {1, 2}}, "argument 'n' is not a JSON value (set)"),
        ({"n": {"k": math.nan}}, "argument 'n' is not a JSON object"),
    ],
)
def test_values_that_cannot_travel_are_invalid_params_naming_the_argument(args: dict[str, Any], message: str) -> None:
    prepared = prepare('say "${s}" & ${n}', schema())
    with pytest.raises(InvalidParams) as caught:
        prepared.argv({"s": "", "n": 0, **args})
    assert message in caught.value.detail


def test_text_of_matches_the_shared_template_rendering() -> None:
    for value in ("x", 3, 2.5, True, [1, {"a": None}]):
        assert text_of(value) == templates.render("<${v}>", {"v": value})[1:-1]


# -- the property: values reach argv byte-identical, and never the source --------------------------------------------

HOSTILE = [
    '"',
    "\\",
    '\\"',
    '" & (do shell script "id") & "',
    "'); doShellScript('id'); ('",
    "$(id)",
    "`id`",
    "%COMSPEC%",
    "${s}",
    'end script\non run\n  do shell script "id"\nend run',
    "(* -- # «class x» |pipe| *)",
    "line\nbreak\r\nand\rreturn",
    "\u202eRTL override \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627",
    "emoji 👩🏽\u200d💻🇫🇷",
    "¬\n",
    "tab\tand\u2028separator",
]
MARKER = "\u2063aai-value\u2063"
VALUE_TEMPLATE = (
    'tell application "Mail"\n'
    '  set m to make new outgoing message with properties {subject:"Re: ${subject}", content:"${body}"}\n'
    "  set tags to ${tags}\n"
    "  return {${count}, ${subject}, ${meta}}\n"
    "end tell"
)
VALUE_SCHEMA = schema(
    {"subject": {"type": "string"}, "body": {"type": "string"}, "tags": {"type": "array"}, "count": {}, "meta": {}}
)
BASELINE = prepare(VALUE_TEMPLATE, VALUE_SCHEMA)

hostile_text = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(),
    st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=6).map("".join),
    st.tuples(st.sampled_from(HOSTILE), st.text(max_size=20)).map("".join),
    st.sampled_from(HOSTILE).map(lambda h: (h * (100_000 // len(h) + 1))[:100_000]),
).filter(lambda t: "\x00" not in t)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | hostile_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def decode(prepared: Prepared, argv: list[str]) -> dict[tuple[str, str], Any]:
    """What the generated `on run argv` and `aai_decode` build from argv, mirrored in Python."""
    out: dict[tuple[str, str], Any] = {}
    position = 0
    for slot in prepared.slots:
        if slot.kind == "text":
            out[(slot.name, "text")] = argv[position]
            position += 1
        else:
            out[(slot.name, "value")], position = decode_value(argv, position)
    assert position == len(argv)
    return out


def decode_value(argv: list[str], at: int) -> tuple[Any, int]:
    kind = argv[at]
    if kind == "n":
        return None, at + 1
    text = argv[at + 1]
    if kind in ("s", "j"):
        return text, at + 2
    if kind == "i":
        return int(text), at + 2
    if kind == "r":
        return float(text), at + 2
    if kind == "b":
        return text == "true", at + 2
    assert kind == "l"
    items, at = [], at + 2
    for _ in range(int(text)):
        item, at = decode_value(argv, at)
        items.append(item)
    return items, at


def as_applescript(value: Any) -> Any:
    """The value the script should hold: objects as JSON text, integers beyond AppleScript's range as reals."""
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        return value if -(2**29) <= value < 2**29 else float(value)
    if isinstance(value, list):
        return [as_applescript(v) for v in value]
    return json.dumps(value, ensure_ascii=False)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    subject=hostile_text,
    body=hostile_text,
    tags=st.lists(hostile_text, max_size=3),
    count=json_values,
    meta=json_values,
)
def test_hostile_values_travel_in_argv_byte_identical_and_never_touch_the_source(
    subject: str, body: str, tags: list[str], count: Any, meta: Any
) -> None:
    args = {"subject": MARKER + subject, "body": body + MARKER, "tags": [MARKER + t for t in tags], "count": count}
    args["meta"] = meta
    prepared = prepare(VALUE_TEMPLATE, VALUE_SCHEMA)
    assert prepared == BASELINE
    argv = prepared.argv(args)
    assert MARKER not in prepared.source
    assert decode(prepared, argv) == {
        ("subject", "text"): args["subject"],
        ("body", "text"): args["body"],
        ("tags", "value"): args["tags"],
        ("count", "value"): as_applescript(count),
        ("subject", "value"): args["subject"],
        ("meta", "value"): as_applescript(meta),
    }
    assert all(item.encode("utf-8").decode("utf-8") == item for item in argv)
    with pytest.raises(InvalidParams, match="argument 'body' contains a NUL character"):
        prepared.argv({**args, "body": body + "\x00" + subject})


def test_the_rewrite_keeps_every_literal_boundary_of_the_template() -> None:
    """Literals without placeholders come through whole, the others as their pieces; no other text literal appears
    outside the generated header, and the header's only literals are the decoder's kind tags."""
    template = VALUE_TEMPLATE + '\nsay "plain \\"quoted\\"" & "${body} tail" -- "${count}" stays a comment'
    prepared = prepare(template, VALUE_SCHEMA)
    out = tokenize(prepared.source)
    script_start = prepared.source.index("script aai_template\n")
    header = [t.text for t in out if t.kind == "string" and t.start < script_start]
    assert set(header) <= {'"n"', '"s"', '"j"', '"i"', '"r"', '"b"', '"true"', '"."', '"l"'}
    literals = [t.text for t in out if t.kind == "string" and t.start > script_start]
    assert literals == ['"Mail"', '"Re: "', '"plain \\"quoted\\""', '" tail"']
    comments = [t.text for t in out if t.kind == "comment" and t.start > script_start]
    assert comments == ['-- "${count}" stays a comment']
    assert all("${" not in t.text for t in out if t.kind != "comment")

"""JXA templates: the tokenizer's literal boundaries and the rewrite of every placeholder position."""

from __future__ import annotations

import inspect
import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aai_gateway.errors import InvalidParams, ScriptParseError
from aai_gateway.executors import jxa
from aai_gateway.executors.jxa_tokens import (
    COMMENT,
    NAME,
    NUMBER,
    PLACE,
    PUNCT,
    REGEX,
    SPACE,
    STRING,
    TEMPLATE,
    TEMPLATE_HEAD,
    TEMPLATE_MIDDLE,
    TEMPLATE_TAIL,
    position,
    tokenize,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "subject": {"type": "string"},
        "body": {"type": "string"},
        "count": {"type": "integer", "default": 1},
        "tags": {"type": "array"},
        "first-name": {"type": "string"},
        "a.b": {"type": "string"},
    },
}
LITERALS = {STRING, TEMPLATE, TEMPLATE_HEAD, TEMPLATE_MIDDLE, TEMPLATE_TAIL, COMMENT, REGEX}


def kinds(source: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(source) if t.kind != SPACE]


def body(template: str) -> str:
    return jxa.prepare(template, SCHEMA).body


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("'a\\'b' \"c\\\"d\"", [(STRING, "'a\\'b'"), (STRING, '"c\\"d"')]),
        ("'a\\\nb'", [(STRING, "'a\\\nb'")]),
        ("'a\\\r\nb'", [(STRING, "'a\\\r\nb'")]),
        ("'a\u2028b'", [(STRING, "'a\u2028b'")]),
        ("x // c ' \n/* ` */y", [(NAME, "x"), (COMMENT, "// c ' "), (COMMENT, "/* ` */"), (NAME, "y")]),
        ("#!/usr/bin/osascript\n1", [(COMMENT, "#!/usr/bin/osascript"), (NUMBER, "1")]),
        ("`a${b}c`", [(TEMPLATE_HEAD, "`a${"), (NAME, "b"), (TEMPLATE_TAIL, "}c`")]),
        ("`a\\${b}`", [(TEMPLATE, "`a\\${b}`")]),
        (
            "`a${ {k: `x${y}`}.k }b${c}d`",
            [
                (TEMPLATE_HEAD, "`a${"),
                (PUNCT, "{"),
                (NAME, "k"),
                (PUNCT, ":"),
                (TEMPLATE_HEAD, "`x${"),
                (NAME, "y"),
                (TEMPLATE_TAIL, "}`"),
                (PUNCT, "}"),
                (PUNCT, "."),
                (NAME, "k"),
                (TEMPLATE_MIDDLE, "}b${"),
                (NAME, "c"),
                (TEMPLATE_TAIL, "}d`"),
            ],
        ),
        ("`${'}'}`", [(TEMPLATE_HEAD, "`${"), (STRING, "'}'"), (TEMPLATE_TAIL, "}`")]),
        ("a / b / c", [(NAME, "a"), (PUNCT, "/"), (NAME, "b"), (PUNCT, "/"), (NAME, "c")]),
        ('x = /a"b[/]\\//gi.test(s)', [(NAME, "x"), (PUNCT, "="), (REGEX, '/a"b[/]\\//gi'), *kinds(".test(s)")]),
        ("return /'/", [(NAME, "return"), (REGEX, "/'/")]),
        ("if (x) /'/.test(y)", [*kinds("if (x)"), (REGEX, "/'/"), *kinds(".test(y)")]),
        ("f(x) / 2 / 3", [*kinds("f(x)"), (PUNCT, "/"), (NUMBER, "2"), (PUNCT, "/"), (NUMBER, "3")]),
        ("a++ / 2 /x", [(NAME, "a"), (PUNCT, "++"), (PUNCT, "/"), (NUMBER, "2"), (PUNCT, "/"), (NAME, "x")]),
        ("o.return / 2 / 1", [*kinds("o.return"), (PUNCT, "/"), (NUMBER, "2"), (PUNCT, "/"), (NUMBER, "1")]),
        ("x /= 2", [(NAME, "x"), (PUNCT, "/="), (NUMBER, "2")]),
        ("a?.b ?? c?.5:1", [*kinds("a?.b"), (PUNCT, "??"), (NAME, "c"), (PUNCT, "?"), (NUMBER, ".5"), *kinds(":1")]),
        ("${x} + a${y}", [(PLACE, "${x}"), (PUNCT, "+"), (NAME, "a"), (PLACE, "${y}")]),
        ("$ + $a + ${ x }", [(NAME, "$"), (PUNCT, "+"), (NAME, "$a"), (PUNCT, "+"), (NAME, "$"), *kinds("{ x }")]),
    ],
)
def test_tokens(source: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(source) == expected


@pytest.mark.parametrize(
    ("source", "where"),
    [
        ("x = 'abc", "unterminated string at 1:5"),
        ('x = "a\nb"', "unterminated string at 1:5"),
        ("a;\n /* never", "unterminated comment at 2:2"),
        ("a\r\n`x${ y }", "unterminated template literal at 2:1"),
        ("`a${ `b${c}` ", "unterminated template literal at 1:1"),
        ("x = /ab\n/", "unterminated regular expression at 1:5"),
        ("\u2028\u2029 'x", "unterminated string at 3:2"),
    ],
)
def test_unterminated_literals_are_located(source: str, where: str) -> None:
    with pytest.raises(ScriptParseError, match=where):
        tokenize(source)


JS_ALPHABET = st.sampled_from([*"'\"`/\\*${}()[]+-=.;:,?!<>\n\r\u2028 abcx019_", "${x}", "if", "return", "//"])


@given(st.one_of(st.text(), st.lists(JS_ALPHABET).map("".join)))
def test_tokens_add_up_to_the_source(source: str) -> None:
    try:
        tokens = tokenize(source)
    except ScriptParseError:
        return
    assert "".join(t.text for t in tokens) == source
    assert all(t.text for t in tokens)
    assert all(a.end == b.start for a, b in itertools.pairwise(tokens))


def test_position_counts_every_line_terminator() -> None:
    assert position("a\r\nb\rc\nd\u2028e\u2029f", 12) == "6:2"
    assert position("abc", 0) == "1:1"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        # code: the value itself
        ("${count} + 1", '__aai.v["count"] + 1'),
        ("f(${tags}, -${count})", 'f(__aai.v["tags"], -__aai.v["count"])'),
        ("o[${first-name}] = ${a.b}", 'o[__aai.v["first-name"]] = __aai.v["a.b"]'),
        # a whole '…' / "…" literal: the value's text
        ('"${subject}"', '__aai.t("subject")'),
        ("'${subject}'.length", '__aai.t("subject").length'),
        # inside a literal: a concatenation keeping the literal's own pieces as written
        ('"Re: ${subject}!"', '("Re: " + __aai.t("subject") + "!")'),
        ("'it\\'s ${subject}\\n${body}'", "('it\\'s ' + __aai.t(\"subject\") + '\\n' + __aai.t(\"body\"))"),
        ('"${subject}${body}"', '(__aai.t("subject") + __aai.t("body"))'),
        ('"a\\\n${body}"', '("a\\\n" + __aai.t("body"))'),
        ('"a\\\r\n${body}"', '("a\\\r\n" + __aai.t("body"))'),
        ('"costs \\${count} $5 ${x"', '"costs \\${count} $5 ${x"'),
        # an object key stays a key
        ('({"${subject}": 1, "k-${body}": 2})', '({[__aai.t("subject")]: 1, [("k-" + __aai.t("body"))]: 2})'),
        ('c ? "${subject}" : 0', 'c ? __aai.t("subject") : 0'),
        # template literals: ${parameter} is the placeholder, any other ${expr} stays JavaScript
        ("`Re: ${subject}!`", '`Re: ${__aai.t("subject")}!`'),
        ("`${first-name} ${a.b}`", '`${__aai.t("first-name")} ${__aai.t("a.b")}`'),
        ("`${ subject }`", "`${ subject }`"),
        ("`${other}`", "`${other}`"),
        ("`${count + 1}`", "`${count + 1}`"),
        ("`${${count} + 1}`", '`${__aai.v["count"] + 1}`'),
        ("`${f('${body}')}`", '`${f(__aai.t("body"))}`'),
        ("`a${`b${subject}`}c`", '`a${`b${__aai.t("subject")}`}c`'),
        ("tag`${subject}`", 'tag`${__aai.t("subject")}`'),
        ("`\\${subject}`", "`\\${subject}`"),
        # comments and regular expressions without placeholders are left alone
        ("x // ${subject} and ${nothing}\n/* ${body} */", "x // ${subject} and ${nothing}\n/* ${body} */"),
        ("/a${2}/.test(s)", "/a${2}/.test(s)"),
        ("#!/usr/bin/env osascript -l JavaScript\n1", "//!/usr/bin/env osascript -l JavaScript\n1"),
    ],
)
def test_rewrite(template: str, expected: str) -> None:
    assert body(template) == expected


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("x = ${subjekt}", r"1:5: \$\{subjekt\} names no parameter .*: a\.b, body, count, first-name, subject, tags$"),
        ('"${nope}"', r"1:1: \$\{nope\} names no parameter"),
        ("x.test(/${subject}/)", r"1:8: a placeholder cannot be part of a regular expression literal"),
        ("a${subject}", r"1:2: \$\{subject\} touches a name or number"),
        ("${subject}b", r"touches a name or number"),
        ("${subject}${body}", r"touches a name or number"),
        ("o.${subject}", r"1:3: \$\{subject\} cannot follow '\.'; write object\[\$\{subject\}\]"),
        ("o?.\n${subject}", r"2:1: \$\{subject\} cannot follow '\.'"),
        ("var __aai = 1", r"1:5: __aai is reserved"),
        ("__aai_result", r"__aai_result is reserved"),
        ("f(1))", r"1:5: '\)' closes nothing"),
        ("if (x) {\n  y(", r"2:4: '\(' is never closed"),
        ("} function run(argv) { x() } {", r"1:1: '}' closes nothing"),
        ("x = /[/", r"unterminated regular expression at 1:5"),
    ],
)
def test_template_errors_are_located(template: str, message: str) -> None:
    with pytest.raises(ScriptParseError, match=message):
        jxa.prepare(template, SCHEMA)


def test_no_parameters_at_all_is_said() -> None:
    with pytest.raises(ScriptParseError, match=r"its parameters: none"):
        jxa.prepare("${x}", {"type": "object"})


@pytest.mark.parametrize(
    "template",
    [
        "function run(argv) { return argv[0] }",
        "// a script\nasync function run(argv) {}",
        "function* run (argv) {}",
        "function /* handler */ run(argv) {}",
    ],
)
def test_a_template_may_not_declare_its_own_run_handler(template: str) -> None:
    with pytest.raises(ScriptParseError, match="declares its own run handler"):
        jxa.prepare(template, SCHEMA)


def test_a_nested_function_named_run_is_fine() -> None:
    assert body("(() => { function run(x) { return x } return run(${count}) })()").endswith('(__aai.v["count"]) })()')


def test_the_script_wraps_the_body_and_keeps_its_line_numbers() -> None:
    prepared = jxa.prepare('var m = "${subject}";\n\nm + ${count}', SCHEMA)
    assert prepared.source.startswith("if (false) {" + prepared.body + "\n}\nfunction run(argv) {\n")
    assert f"eval({json.dumps(prepared.body)})" in prepared.source
    assert prepared.body.count("\n") == 2
    assert prepared.names == ("subject", "count")
    assert prepared.defaults == {"count": 1}


def test_prepare_never_sees_argument_values() -> None:
    assert list(inspect.signature(jxa.prepare).parameters) == ["template", "parameters"]
    prepared = jxa.prepare('say("${subject}")', SCHEMA)
    hostile = '"); doShellScript("id"); ("'
    assert hostile not in prepared.source
    assert json.loads(prepared.argv({"subject": hostile})[0]) == {"subject": hostile}


def test_literal_pieces_stay_literal_tokens() -> None:
    template = (
        "var a = \"Re: ${subject}!\", b = 'x\\'y${body}';\n"
        "var c = `pre ${subject} mid ${ f('${body}', `in ${count}`) } post`; // note ${subject}\n"
        "/* block */ var d = /[\"'`]/g.test('${subject}') ? \"${count}\" : ${count} / 2;"
    )
    before = [t for t in tokenize(template) if t.kind in LITERALS]
    after = [(t.kind, t.text) for t in tokenize(body(template))]
    expected_pieces = [
        (STRING, '"Re: "'),
        (STRING, '"!"'),
        (STRING, "'x\\'y'"),
        (TEMPLATE_HEAD, "`pre ${"),
        (TEMPLATE_MIDDLE, "} mid ${"),
        (TEMPLATE_HEAD, "`in ${"),
        (TEMPLATE_TAIL, "}`"),
        (TEMPLATE_TAIL, "} post`"),
        (COMMENT, "// note ${subject}"),
        (COMMENT, "/* block */"),
        (REGEX, "/[\"'`]/g"),
    ]
    literal_after = [pair for pair in after if pair[0] in LITERALS]
    for piece in expected_pieces:
        assert piece in literal_after
    untouched = [t for t in before if "${" not in t.text or t.kind == COMMENT or t.kind.startswith("template")]
    for token in untouched:
        assert (token.kind, token.text) in literal_after
    assert all(kind != PLACE for kind, _ in after)


class TestArgv:
    prepared = jxa.prepare('f(${count}, "${subject}", `${body}`, ${tags})', SCHEMA)

    def test_values_and_defaults(self) -> None:
        (text,) = self.prepared.argv({"subject": "s", "body": None, "unused": "x"})
        assert json.loads(text) == {"count": 1, "subject": "s", "body": None, "tags": None}

    def test_text_is_compact_utf8_with_escaped_lone_surrogates(self) -> None:
        (text,) = self.prepared.argv({"subject": "Grüße 👩‍💻 \u202ehi\ud800", "body": "a\x00b\r\n\u2028"})
        assert "Grüße 👩‍💻 \u202ehi\\ud800" in text
        assert "\x00" not in text
        assert "\\u0000" in text
        assert json.loads(text)["subject"] == "Grüße 👩‍💻 \u202ehi\ud800"
        assert json.loads(text)["body"] == "a\x00b\r\n\u2028"
        text.encode()  # every surrogate is escaped: the text is valid UTF-8

    def test_values_that_are_not_json_are_refused(self) -> None:
        with pytest.raises(InvalidParams, match="cannot be sent to the script as JSON"):
            self.prepared.argv({"count": float("nan")})

    def test_arguments_too_large_for_a_command_line_are_refused(self) -> None:
        with pytest.raises(InvalidParams, match=r"more than the \d+ osascript can be given .* the largest is 'body'"):
            self.prepared.argv({"subject": "s", "body": "x" * jxa.ARGUMENT_LIMIT})

    @given(st.text(st.characters(codec=None, exclude_categories=())))
    def test_any_text_round_trips(self, value: str) -> None:
        (text,) = self.prepared.argv({"subject": value})
        text.encode()
        assert json.loads(text)["subject"] == value

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aai_gateway.errors import ScriptParseError
from aai_gateway.executors.applescript_tokens import Lines, Token, tokenize


def kinds(source: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(source)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('say "hi"', [("code", "say "), ("string", '"hi"')]),
        (r'"a\"b" & x', [("string", r'"a\"b"'), ("code", " & x")]),
        (r'"back\\" & "x"', [("string", r'"back\\"'), ("code", " & "), ("string", '"x"')]),
        (r'"\n\t\r"', [("string", r'"\n\t\r"')]),
        ('"two\nlines"', [("string", '"two\nlines"')]),
        ('"-- not a comment (* nor this"', [("string", '"-- not a comment (* nor this"')]),
        ("set x to 1 -- one\nx", [("code", "set x to 1 "), ("comment", "-- one"), ("code", "\nx")]),
        ("x -- crlf\r\ny", [("code", "x "), ("comment", "-- crlf"), ("code", "\r\ny")]),
        ("x -- cr\ry", [("code", "x "), ("comment", "-- cr"), ("code", "\ry")]),
        ("-- last line", [("comment", "-- last line")]),
        ('-- a "quote', [("comment", '-- a "quote')]),
        ("#!/usr/bin/osascript\nbeep", [("comment", "#!/usr/bin/osascript"), ("code", "\nbeep")]),
        ("beep # hash comment", [("code", "beep "), ("comment", "# hash comment")]),
        ("(* block *)beep", [("comment", "(* block *)"), ("code", "beep")]),
        ("(* a (* nested *) b *) x", [("comment", "(* a (* nested *) b *)"), ("code", " x")]),
        ('(* "*)" *) x', [("comment", '(* "*)" *)'), ("code", " x")]),
        ("(* -- *) x", [("comment", "(* -- *)"), ("code", " x")]),
        ("(* # *) x", [("comment", "(* # *)"), ("code", " x")]),
        ("(* multi\nline *)", [("comment", "(* multi\nline *)")]),
        ("«event aevtodoc» x", [("chevron", "«event aevtodoc»"), ("code", " x")]),
        ("get «class prop» of x", [("code", "get "), ("chevron", "«class prop»"), ("code", " of x")]),
        ("«data rdat0000»", [("chevron", "«data rdat0000»")]),
        ('«class "x»', [("chevron", '«class "x»')]),
        ("set |my var| to 1", [("code", "set "), ("pipe", "|my var|"), ("code", " to 1")]),
        ('|say "hi"|', [("pipe", '|say "hi"|')]),
        (r"|a\|b|", [("pipe", r"|a\|b|")]),
        (r"|a\\| & x", [("pipe", r"|a\\|"), ("code", " & x")]),
        ("|-- (* #|", [("pipe", "|-- (* #|")]),
        ("set x to ¬\n  1", [("code", "set x to ¬\n  1")]),
        ("a - b * (c)", [("code", "a - b * (c)")]),
        ("", []),
    ],
)
def test_each_construct_is_one_token(source: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(source) == expected


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('say "hi', 'unterminated string literal starting at 1:5: no closing "'),
        ('x\n  "a\\"', "unterminated string literal starting at 2:3"),
        ("x\r\n(* open", "unterminated block comment starting at 2:1: 1 (* still open"),
        ("(* (* one closed *)", "unterminated block comment starting at 1:1: 1 (* still open"),
        ('(* an "open quote *)', "unterminated string literal starting at 1:7 inside the block comment at 1:1"),
        ("get «class prop", "unterminated «…» raw code starting at 1:5: no closing »"),
        ("set |a b to 1", "unterminated |…| identifier starting at 1:5: no closing |"),
        ("\n\n  |a\\|", "unterminated |…| identifier starting at 3:3"),
    ],
)
def test_unterminated_constructs_name_line_and_column(source: str, message: str) -> None:
    with pytest.raises(ScriptParseError) as caught:
        tokenize(source)
    assert message in caught.value.detail


def test_tokens_know_their_line_and_column() -> None:
    source = 'tell app "Mail"\r\n\tsay "x" -- c\rend tell\n«class a»'
    found = {t.text: (t.line, t.column, t.start, t.where) for t in tokenize(source) if t.kind != "code"}
    assert found == {
        '"Mail"': (1, 10, 9, "1:10"),
        '"x"': (2, 6, 22, "2:6"),
        "-- c": (2, 10, 26, "2:10"),
        "«class a»": (4, 1, 40, "4:1"),
    }
    token = tokenize("ab")[0]
    assert (token.start, token.end) == (0, 2)


def test_lines_count_lf_cr_and_crlf_as_one_break_each() -> None:
    lines = Lines("a\nb\r\nc\rd")
    assert [lines.at(i) for i in range(8)] == [(1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 1), (3, 2), (4, 1)]
    assert lines.where(7) == "4:1"


SPECIALS = st.sampled_from(['"', "\\", "(", "*", ")", "-", "#", "«", "»", "|", "\n", "\r", "¬", " ", "a", "“"])


@settings(max_examples=500)
@given(st.lists(st.one_of(SPECIALS, st.characters()), max_size=60).map("".join))
def test_tokens_give_back_the_source_exactly(source: str) -> None:
    try:
        tokens = tokenize(source)
    except ScriptParseError:
        return
    assert "".join(t.text for t in tokens) == source
    assert all(t.text for t in tokens)
    assert all(a.end == b.start for a, b in itertools.pairwise(tokens))
    assert all(a.kind != "code" or b.kind != "code" for a, b in itertools.pairwise(tokens))


PLAIN = st.text(alphabet=st.characters(blacklist_characters='"\\(*)-#«»|“”\r\n'), min_size=1, max_size=8)
TEXT_CHAR = st.one_of(st.characters(blacklist_characters='"\\'), st.sampled_from(['\\"', "\\\\", "\\n", "\\t", "\\r"]))
STRING = st.lists(TEXT_CHAR, max_size=8).map(lambda cs: '"' + "".join(cs) + '"')
PIPE_CHAR = st.one_of(st.characters(blacklist_characters="|\\"), st.sampled_from(["\\|", "\\\\"]))
PIPE = st.lists(PIPE_CHAR, max_size=8).map(lambda cs: "|" + "".join(cs) + "|")
CHEVRON = st.text(alphabet=st.characters(blacklist_characters="»"), max_size=8).map(lambda t: f"«{t}»")
LINE_COMMENT = st.tuples(st.sampled_from(["--", "#"]), st.text(st.characters(blacklist_characters="\r\n"), max_size=8))
BLOCK = st.recursive(
    st.just("(**)"),
    lambda inner: st.lists(st.one_of(inner, STRING, PLAIN), max_size=4).map(lambda parts: "(*" + "".join(parts) + "*)"),
    max_leaves=6,
)


@st.composite
def scripts(draw: st.DrawFn) -> list[tuple[str, str]]:
    """Well-formed token sequences, code runs between the other tokens so that no two run together."""
    parts: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(0, 8))):
        parts.append(("code", draw(PLAIN)))
        choice = draw(st.sampled_from(["string", "pipe", "chevron", "block", "line"]))
        if choice == "line":
            start, text = draw(LINE_COMMENT)
            parts += [("comment", start + text), ("code", draw(st.sampled_from(["\n", "\r", "\r\n"])))]
        else:
            strategy = {"string": STRING, "pipe": PIPE, "chevron": CHEVRON, "block": BLOCK}[choice]
            parts.append(("comment" if choice == "block" else choice, draw(strategy)))
    return parts


@settings(max_examples=300)
@given(scripts())
def test_well_formed_scripts_split_where_they_were_joined(parts: list[tuple[str, str]]) -> None:
    merged: list[tuple[str, str]] = []
    for kind, text in parts:
        if merged and kind == "code" and merged[-1][0] == "code":
            merged[-1] = ("code", merged[-1][1] + text)
        else:
            merged.append((kind, text))
    assert kinds("".join(text for _, text in parts)) == merged


def test_a_token_is_a_plain_value() -> None:
    assert Token("code", "x", 0, 1, 1) == tokenize("x")[0]

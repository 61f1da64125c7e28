"""A JavaScript tokenizer that knows where literals begin and end, for rewriting JXA templates.

It is not a parser: it finds strings, template literals (with nested `${ … }` expressions), comments,
regular-expression literals and the code between them, and it marks `${name}` placeholders standing in
code. A `/` starts a regular expression or divides depending on the previous significant token (the
usual heuristic, refined for `if (…) /re/`). The texts of the tokens always add up to the source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aai_gateway.errors import ScriptParseError
from aai_gateway.templates import PLACEHOLDER

SPACE, COMMENT, NAME, NUMBER, PUNCT, PLACE = "space", "comment", "name", "number", "punct", "placeholder"
STRING, REGEX = "string", "regex"
TEMPLATE, TEMPLATE_HEAD, TEMPLATE_MIDDLE, TEMPLATE_TAIL = (
    "template",
    "template_head",
    "template_middle",
    "template_tail",
)
"""`…` whole; `…${ head; }…${ middle; }…` tail (a template literal with substitutions)."""

INSIGNIFICANT = frozenset({SPACE, COMMENT})
VALUES = frozenset({NUMBER, STRING, TEMPLATE, TEMPLATE_TAIL, REGEX, PLACE})
"""Tokens after which `/` divides."""

BEFORE_EXPRESSION = frozenset({
    "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield",
    "await", "extends",
})  # fmt: skip
"""Keywords after which `/` starts a regular expression."""

CONTROL = frozenset({"if", "while", "for", "with"})
"""Keywords whose `( … )` is followed by a statement, where `/` starts a regular expression."""

LINE_BREAKS = "\n\r\u2028\u2029"
_LINE = re.compile(r"\r\n|[\n\r\u2028\u2029]")
_SPACE = re.compile(r"[\s\ufeff]+")
_NAME = re.compile(r"(?:[\w\u200c\u200d]|\$(?!\{[A-Za-z_][A-Za-z0-9_.-]*\}))+")
_NUMBER = re.compile(r"\.?\d(?:[eE][+-]\d|[\w.])*")
_FLAGS = re.compile(r"[\w$]*")
_PUNCTUATORS = (
    ">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=", "=>", "==", "!=", "<=", ">=", "&&",
    "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "**", "<<", ">>",
)  # fmt: skip
"""Punctuators of more than one character, longest first."""


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)


def position(source: str, offset: int) -> str:
    """`line:column` (both from 1) of `offset`, counting every JavaScript line terminator."""
    line, begin = 1, 0
    for found in _LINE.finditer(source, 0, offset):
        line, begin = line + 1, found.end()
    return f"{line}:{offset - begin + 1}"


def tokenize(source: str) -> list[Token]:
    """The tokens of `source`; raises `ScriptParseError` at an unterminated literal or comment."""
    return _Scanner(source).run()


@dataclass(slots=True)
class _Substitution:
    opened: int
    """Where the template literal that holds this `${ … }` began, for error messages."""
    braces: int = 0


class _Scanner:
    def __init__(self, source: str) -> None:
        self.src = source
        self.tokens: list[Token] = []
        self.substitutions: list[_Substitution] = []
        self.parens: list[bool] = []
        """One entry per open `(`: whether it follows if/while/for/with."""
        self.control_closed = False
        """Whether the last significant token is the `)` of an if/while/for/with."""

    def run(self) -> list[Token]:
        src, pos = self.src, 0
        if src.startswith("#!"):
            pos = self._until_line_break(0, COMMENT)
        while pos < len(src):
            pos = self._next(pos)
        if self.substitutions:
            raise self._error("unterminated template literal", self.substitutions[-1].opened)
        return self.tokens

    def _next(self, pos: int) -> int:
        src, ch = self.src, self.src[pos]
        space = _SPACE.match(src, pos)
        if space:
            return self._emit(SPACE, space.end(), pos)
        if src.startswith("//", pos):
            return self._until_line_break(pos, COMMENT)
        if src.startswith("/*", pos):
            end = src.find("*/", pos + 2)
            if end < 0:
                raise self._error("unterminated comment", pos)
            return self._emit(COMMENT, end + 2, pos)
        if ch in "'\"":
            return self._string(pos)
        if ch == "`":
            return self._template(pos, pos + 1, TEMPLATE, TEMPLATE_HEAD)
        if ch == "/" and self._regex_allowed():
            return self._regex(pos)
        if ch == "$":
            placeholder = PLACEHOLDER.match(src, pos)
            if placeholder:
                return self._emit(PLACE, placeholder.end(), pos)
        number = _NUMBER.match(src, pos)
        if number:
            return self._emit(NUMBER, number.end(), pos)
        name = _NAME.match(src, pos)
        if name:
            return self._emit(NAME, name.end(), pos)
        return self._punctuator(pos)

    def _punctuator(self, pos: int) -> int:
        src, ch = self.src, self.src[pos]
        if ch == "}" and self.substitutions:
            if self.substitutions[-1].braces == 0:
                opened = self.substitutions.pop().opened
                return self._template(pos, pos + 1, TEMPLATE_TAIL, TEMPLATE_MIDDLE, opened)
            self.substitutions[-1].braces -= 1
        elif ch == "{" and self.substitutions:
            self.substitutions[-1].braces += 1
        text = next((p for p in _PUNCTUATORS if src.startswith(p, pos)), ch)
        if text == "?." and src[pos + 2 : pos + 3].isdigit():
            text = "?"  # `a?.5:b` is a conditional
        control = False
        if text == "(":
            last = self._significant()
            self.parens.append(
                last is not None and last.kind == NAME and last.text in CONTROL and not self._after_dot()
            )
        elif text == ")":
            control = self.parens.pop() if self.parens else False
        end = self._emit(PUNCT, pos + len(text), pos)
        self.control_closed = control
        return end

    def _string(self, pos: int) -> int:
        src, quote, i = self.src, self.src[pos], pos + 1
        while i < len(src):
            ch = src[i]
            if ch == quote:
                return self._emit(STRING, i + 1, pos)
            if ch in "\n\r":
                break
            i += 3 if src.startswith("\\\r\n", i) else 2 if ch == "\\" else 1
        raise self._error("unterminated string", pos)

    def _template(self, pos: int, i: int, whole: str, head: str, opened: int | None = None) -> int:
        src = self.src
        opened = pos if opened is None else opened
        while i < len(src):
            ch = src[i]
            if ch == "`":
                return self._emit(whole, i + 1, pos)
            if src.startswith("${", i):
                self.substitutions.append(_Substitution(opened))
                return self._emit(head, i + 2, pos)
            i += 2 if ch == "\\" else 1
        raise self._error("unterminated template literal", opened)

    def _regex(self, pos: int) -> int:
        src, i, in_class = self.src, pos + 1, False
        while i < len(src) and src[i] not in LINE_BREAKS:
            ch = src[i]
            if ch == "\\":
                i += 1
                if i < len(src) and src[i] in LINE_BREAKS:
                    break
            elif ch == "[":
                in_class = True
            elif ch == "]":
                in_class = False
            elif ch == "/" and not in_class:
                flags = _FLAGS.match(src, i + 1)
                assert flags is not None
                return self._emit(REGEX, flags.end(), pos)
            i += 1
        raise self._error("unterminated regular expression", pos)

    def _until_line_break(self, pos: int, kind: str) -> int:
        end = pos
        while end < len(self.src) and self.src[end] not in LINE_BREAKS:
            end += 1
        return self._emit(kind, end, pos)

    def _emit(self, kind: str, end: int, start: int) -> int:
        self.tokens.append(Token(kind, self.src[start:end], start))
        if kind not in INSIGNIFICANT:
            self.control_closed = False
        return end

    def _significant(self, skip: int = 0) -> Token | None:
        for token in reversed(self.tokens):
            if token.kind not in INSIGNIFICANT:
                if skip == 0:
                    return token
                skip -= 1
        return None

    def _after_dot(self) -> bool:
        before = self._significant(1)
        return before is not None and before.kind == PUNCT and before.text in (".", "?.")

    def _regex_allowed(self) -> bool:
        last = self._significant()
        if last is None:
            return True
        if last.kind in VALUES:
            return False
        if last.kind == NAME:
            return last.text in BEFORE_EXPRESSION and not self._after_dot()
        if last.kind == PUNCT:
            if last.text == ")":
                return self.control_closed
            return last.text not in ("]", "++", "--")
        return True  # after `${` or `}…${` an expression begins

    def _error(self, what: str, offset: int) -> ScriptParseError:
        return ScriptParseError(f"the JXA template has an {what} at {position(self.src, offset)}")

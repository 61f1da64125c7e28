"""AppleScript's lexical layer: where string literals, comments, «raw codes» and |identifiers| begin and end.

Enough of a lexer to rewrite templates safely: everything else is coarse "code" runs. Rules, as the
AppleScript Language Guide gives them:

- `"…"` text with backslash escapes (`\\"`, `\\\\`, `\\n`, `\\t`, `\\r`); a literal may span lines.
- `--` and `#` start a comment to the end of the line (`\\n`, `\\r` or `\\r\\n`, which stays code).
- `(* … *)` block comments nest; text literals inside them are still scanned, so `(* "*)" *)` is a
  single comment and an unbalanced `"` inside a block comment is an error, as it is for AppleScript.
  `--` and `#` have no meaning inside a block comment.
- `«…»` raw codes (`«event aevtodoc»`, `«class prop»`, `«data rdat0000»`) run to the first `»`.
- `|…|` identifiers may hold any character; `\\|` and `\\\\` escape a bar and a backslash.
- `¬` (line continuation) is code.

Joining the texts of the tokens gives back the source exactly. An unterminated construct is a
`ScriptParseError` naming its line:column (1-based; columns count characters).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Literal

from aai_gateway.errors import ScriptParseError

Kind = Literal["code", "string", "comment", "chevron", "pipe"]

_BREAK = re.compile(r"\r\n|\r|\n")
_START = re.compile(r'"|«|\||#|--|\(\*')
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_PIPE = re.compile(r"\|[^|\\]*(?:\\.[^|\\]*)*\|", re.DOTALL)
_LINE_END = re.compile(r"[\r\n]")
_IN_BLOCK = re.compile(r'\(\*|\*\)|"')


class Lines:
    """Offsets in a source → 1-based line and column."""

    def __init__(self, source: str) -> None:
        self._starts = [0, *(m.end() for m in _BREAK.finditer(source))]

    def at(self, offset: int) -> tuple[int, int]:
        index = bisect_right(self._starts, offset) - 1
        return index + 1, offset - self._starts[index] + 1

    def where(self, offset: int) -> str:
        line, column = self.at(offset)
        return f"{line}:{column}"


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str
    start: int
    line: int
    column: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def where(self) -> str:
        return f"{self.line}:{self.column}"


def tokenize(source: str) -> list[Token]:
    """Split `source` into tokens; raises `ScriptParseError` for an unterminated construct."""
    lines = Lines(source)
    tokens: list[Token] = []

    def emit(kind: Kind, start: int, end: int) -> None:
        if end > start:
            line, column = lines.at(start)
            tokens.append(Token(kind, source[start:end], start, line, column))

    position = 0
    while True:
        found = _START.search(source, position)
        if found is None:
            emit("code", position, len(source))
            return tokens
        start = found.start()
        emit("code", position, start)
        kind: Kind
        opener = found.group()
        if opener == '"':
            kind, end = "string", _string_end(source, start, lines, "")
        elif opener == "«":
            close = source.find("»", start + 1)
            if close < 0:
                raise ScriptParseError(f"unterminated «…» raw code starting at {lines.where(start)}: no closing »")
            kind, end = "chevron", close + 1
        elif opener == "|":
            pipe = _PIPE.match(source, start)
            if pipe is None:
                raise ScriptParseError(f"unterminated |…| identifier starting at {lines.where(start)}: no closing |")
            kind, end = "pipe", pipe.end()
        elif opener == "(*":
            kind, end = "comment", _block_end(source, start, lines)
        else:
            line_end = _LINE_END.search(source, start)
            kind, end = "comment", line_end.start() if line_end else len(source)
        emit(kind, start, end)
        position = end


def _string_end(source: str, start: int, lines: Lines, inside: str) -> int:
    literal = _STRING.match(source, start)
    if literal is None:
        raise ScriptParseError(f'unterminated string literal starting at {lines.where(start)}{inside}: no closing "')
    return literal.end()


def _block_end(source: str, start: int, lines: Lines) -> int:
    depth, position = 1, start + 2
    while depth:
        found = _IN_BLOCK.search(source, position)
        if found is None:
            raise ScriptParseError(
                f"unterminated block comment starting at {lines.where(start)}: "
                f"{depth} (* still open at the end of the script"
            )
        if found.group() == '"':
            position = _string_end(source, found.start(), lines, f" inside the block comment at {lines.where(start)}")
            continue
        depth += 1 if found.group() == "(*" else -1
        position = found.end()
    return position

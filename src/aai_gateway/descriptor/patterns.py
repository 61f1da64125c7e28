"""Strings that match a regular expression, for the example value of a string parameter with a `pattern`: a small
reader turns the regex into a tree of alternatives and quantified pieces, and a writer spells the tree out with the
simplest character each piece allows, each repeated piece one longer per string. A regex feature the reader does not
handle raises `UnsupportedPattern`, and `pattern_examples` then yields nothing.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from typing import TypeAlias

MAX_SIZE = 1000
PREFERRED_CHARS = string.ascii_lowercase + string.digits + string.ascii_uppercase + "_-. " + string.punctuation


class UnsupportedPattern(ValueError):
    """A regex feature the example writer does not handle."""


def pattern_examples(pattern: str, least: int = 0) -> Iterator[str]:
    """Strings matching `pattern`, each repeated part growing by one more each time.

    Handles literals, escapes, character classes, `.`, groups, `|` (its first branch), anchors and
    quantifiers. Lookarounds, backreferences, `\\b`, `\\p{...}` and nested classes are not supported:
    such a pattern yields nothing.
    """
    try:
        tree = _PatternReader(pattern).read()
    except UnsupportedPattern:
        return
    previous = None
    for extra in range(min(max(least, 8), MAX_SIZE) + 1):
        try:
            text = _write(tree, extra)
        except UnsupportedPattern:
            return
        if text == previous:
            return
        previous = text
        yield text


_Tree: TypeAlias = "list[list[_Piece]]"
_Piece: TypeAlias = "tuple[str | _Tree, int, int | None]"


def _write(alternatives: _Tree, extra: int) -> str:
    return "".join(_write_piece(piece, extra) for piece in alternatives[0])


def _write_piece(piece: _Piece, extra: int) -> str:
    atom, least, most = piece
    count = least + extra if most is None else min(least + extra, most)
    text = atom if isinstance(atom, str) else _write(atom, extra)
    if len(text) * count > MAX_SIZE:
        raise UnsupportedPattern("matches only long strings")
    return text * count


class _PatternReader:
    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.at = 0

    def read(self) -> _Tree:
        tree = self._alternatives()
        if self.at < len(self.text):
            raise UnsupportedPattern(f"unbalanced ) at {self.at}")
        return tree

    def _peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def _take(self) -> str:
        if self.at >= len(self.text):
            raise UnsupportedPattern("pattern ends early")
        self.at += 1
        return self.text[self.at - 1]

    def _alternatives(self) -> _Tree:
        alternatives = [self._sequence()]
        while self._peek() == "|":
            self.at += 1
            alternatives.append(self._sequence())
        return alternatives

    def _sequence(self) -> list[_Piece]:
        pieces: list[_Piece] = []
        while self._peek() not in ("", "|", ")"):
            atom = self._atom()
            pieces.append((atom, *self._quantifier()))
        return pieces

    def _atom(self) -> str | _Tree:
        char = self._take()
        if char == "(":
            return self._group()
        if char == "[":
            return _first_match(self._class())
        if char == "\\":
            return self._escape()
        if char in "*+?":
            raise UnsupportedPattern(f"nothing to repeat at {self.at}")
        return {"^": "", "$": "", ".": "a"}.get(char, char)

    def _group(self) -> _Tree:
        if self._peek() == "?":
            head = re.match(r"\?(:|P?<[A-Za-z_]\w*>)", self.text[self.at :])
            if head is None:
                raise UnsupportedPattern(f"lookaround or flag group at {self.at}")
            self.at += head.end()
        tree = self._alternatives()
        if self._take() != ")":
            raise UnsupportedPattern("unclosed group")
        return tree

    def _class(self) -> str:
        end = re.match(r"\^?\]?(?:\\.|[^\]\\])*\]", self.text[self.at :], re.DOTALL)
        if end is None:
            raise UnsupportedPattern("unclosed character class")
        body = self.text[self.at : self.at + end.end()]
        if any(mark in re.sub(r"\\.", "", body[:-1]) for mark in ("[", "&&", "--", "||", "~~")):
            raise UnsupportedPattern("nested or set-operation class")
        self.at += end.end()
        return "[" + body

    def _escape(self) -> str:
        char = self._take()
        if char in "dwsDWS":
            return _first_match("\\" + char)
        if char in "AZ":
            return ""
        if char in "bBpPk" or char.isdigit():
            raise UnsupportedPattern(f"\\{char} is not supported")
        if char in "xu":
            digits = self.text[self.at : self.at + (2 if char == "x" else 4)]
            self.at += len(digits)
            try:
                return chr(int(digits, 16))
            except ValueError as error:
                raise UnsupportedPattern(f"bad \\{char} escape") from error
        return {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}.get(char, char)

    def _quantifier(self) -> tuple[int, int | None]:
        char = self._peek()
        count = re.match(r"\{(\d*)(,?)(\d*)\}", self.text[self.at :]) if char == "{" else None
        if char in ("*", "+", "?"):
            self.at += 1
            bounds: tuple[int, int | None] = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
        elif count and count[1] + count[3]:
            self.at += count.end()
            least = int(count[1] or 0)
            bounds = (least, None if count[2] and not count[3] else int(count[3] or least))
        else:
            return (1, 1)
        if bounds[0] > MAX_SIZE:
            raise UnsupportedPattern("repeats too often")
        if self._peek() in ("?", "+"):
            self.at += 1
        return bounds


def _first_match(matcher: str) -> str:
    try:
        compiled = re.compile(matcher)
    except re.error as error:
        raise UnsupportedPattern(str(error)) from error
    found = next((c for c in PREFERRED_CHARS if compiled.fullmatch(c)), None)
    if found is None:
        raise UnsupportedPattern(f"no simple character matches {matcher}")
    return found

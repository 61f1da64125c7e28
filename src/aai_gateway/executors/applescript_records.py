"""What `osascript -s s` prints for a result (AppleScript source form) → JSON.

Records `{subject:"Hi", |odd key|:3}` become objects (keys: the label's text, without bars; a
multi-word or raw-code label such as `date sent` or `«class abcd»` as written), lists arrays, text
strings, integers and reals numbers, `true`/`false` booleans, `missing value` and `null` None. Any
other value (`date "…"`, `application "Mail"`, `«class xyz»`, `alias "Mac:Users:"`, an object
specifier) becomes its source text. `{}` is an empty list: AppleScript writes the empty record the
same way, and `{}` is the literal for a list. Empty output (a script without a result) is None.
Malformed text is a `ValueError` naming where.
"""

from __future__ import annotations

import re
from typing import Any

from aai_gateway.executors.applescript_tokens import Lines

_INTEGER = re.compile(r"-?[0-9]+")
_REAL = re.compile(r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?")
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_PIPE = re.compile(r"\|[^|\\]*(?:\\.[^|\\]*)*\|", re.DOTALL)
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}
_SPECIAL = re.compile(r'["|«{}(),:]')
_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "missing value": None, "null": None}
_CLOSERS = {"{": "}", "(": ")"}


def parse_record(text: str) -> Any:
    """The JSON value of an AppleScript result printed in source form."""
    return _Parser(text).whole()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: Lines | None = None

    def whole(self) -> Any:
        start, end = _trim(self.text, 0, len(self.text))
        if start == end:
            return None
        self.scan(start, end)
        return self.value(start, end)

    def value(self, start: int, end: int) -> Any:
        """The value written in text[start:end] (already trimmed and balanced)."""
        source = self.text[start:end]
        if source.startswith("{") and self.scan(start + 1, end, "}") == end - 1:
            return self.collection(start + 1, end - 1)
        if source.startswith('"') and _STRING.fullmatch(source):
            return self.string(source, start)
        if source.lower() in _CONSTANTS:
            return _CONSTANTS[source.lower()]
        if _INTEGER.fullmatch(source):
            return int(source)
        if _REAL.fullmatch(source):
            return float(source)
        return source

    def collection(self, start: int, end: int) -> Any:
        items = self.items(start, end)
        if not items:
            return []
        labels = [self.label(item_start, item_end) for item_start, item_end in items]
        if all(label is None for label in labels):
            return [self.value(*item) for item in items]
        record: dict[str, Any] = {}
        for (item_start, item_end), label in zip(items, labels, strict=True):
            if label is None:
                raise self.error("a list item among the labelled items of a record", item_start)
            key, colon = label
            value_start, value_end = _trim(self.text, colon + 1, item_end)
            if value_start == value_end:
                raise self.error(f"no value after the label {key!r}", colon)
            record[key] = self.value(value_start, value_end)
        return record

    def items(self, start: int, end: int) -> list[tuple[int, int]]:
        """The trimmed spans of the comma-separated items in text[start:end]."""
        first, last = _trim(self.text, start, end)
        if first == last:
            return []
        spans: list[tuple[int, int]] = []
        position = start
        while True:
            stop = self.scan(position, end, ",")
            item = _trim(self.text, position, stop)
            if item[0] == item[1]:
                raise self.error("an empty item", item[0])
            spans.append(item)
            if stop == end:
                return spans
            position = stop + 1

    def label(self, start: int, end: int) -> tuple[str, int] | None:
        """A record item's label and the offset of its colon, or None for a list item."""
        colon = self.scan(start, end, ":")
        if colon == end:
            return None
        key_start, key_end = _trim(self.text, start, colon)
        key = self.text[key_start:key_end]
        if not key:
            raise self.error("a record label is missing", colon)
        if _PIPE.fullmatch(key):
            return _ESCAPE.sub(r"\1", key[1:-1]), colon
        return key, colon

    def string(self, source: str, start: int) -> str:
        def unescape(found: re.Match[str]) -> str:
            char = found.group(1)
            if char not in _ESCAPES:
                raise self.error(f"unknown escape \\{char} in a text", start + 1 + found.start())
            return _ESCAPES[char]

        return _ESCAPE.sub(unescape, source[1:-1])

    def scan(self, position: int, end: int, stops: str = "") -> int:
        """The first offset in text[position:end] of a character of `stops` outside brackets, texts, |labels|
        and «raw codes»; `end` when there is none. Unbalanced text is an error."""
        stack: list[str] = []
        while True:
            found = _SPECIAL.search(self.text, position, end)
            if found is None:
                if stack:
                    raise self.error(f"{_opener(stack[-1])!r} is never closed", end)
                return end
            char, at = found.group(), found.start()
            position = at + 1
            if not stack and char in stops:
                return at
            if char == '"':
                position = self.skip(_STRING, at, end, "text")
            elif char == "|":
                position = self.skip(_PIPE, at, end, "|label|")
            elif char == "«":
                close = self.text.find("»", at + 1, end)
                if close < 0:
                    raise self.error("a «raw code» is never closed", at)
                position = close + 1
            elif char in _CLOSERS:
                stack.append(_CLOSERS[char])
            elif char in _CLOSERS.values():
                if not stack or stack[-1] != char:
                    raise self.error(f"unexpected {char!r}", at)
                stack.pop()

    def skip(self, pattern: re.Pattern[str], at: int, end: int, what: str) -> int:
        found = pattern.match(self.text, at, end)
        if found is None:
            raise self.error(f"a {what} is never closed", at)
        return found.end()

    def error(self, problem: str, offset: int) -> ValueError:
        if self.lines is None:
            self.lines = Lines(self.text)
        return ValueError(f"{problem} at offset {offset} (line {self.lines.where(offset).replace(':', ', column ')})")


def _opener(closer: str) -> str:
    return next(opener for opener, close in _CLOSERS.items() if close == closer)


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end

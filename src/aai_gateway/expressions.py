"""`${…}` in plans and undo declarations: JMESPath queries over JSON values, and nothing else.

A string that is exactly one `${expr}` takes the value's JSON type; inside a longer string each value is
written in as text (a string as it is, anything else as JSON). `$${` is a literal `${`. The queries
read only the JSON they are given (JMESPath has no way to reach Python objects, files or the
environment); their length, the templates' depth and the text they produce are bounded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.functions import Functions
from jmespath.parser import ParsedResult

MAX_EXPRESSION = 1_000
"""Characters one `${…}` may hold."""
MAX_DEPTH = 32
"""Nesting of objects and lists in a template."""
MAX_TEXT = 1_000_000
"""Characters a string built from values may reach."""
_QUOTES = "'\"`"
FUNCTIONS = frozenset(Functions.FUNCTION_TABLE)
"""JMESPath's own functions, the only ones a query may call."""


class ExpressionError(ValueError):
    """A template that cannot be read or evaluated; the message says where and why."""


@dataclass(frozen=True, slots=True)
class Piece:
    text: str
    expression: ParsedResult | None = None


MOST_CACHED = 4_096
"""Characters of a template whose cut is kept: a plan run again reads the same templates."""


def pieces(text: str, where: str = "") -> tuple[Piece, ...]:
    """`text` cut into literal text and parsed `${…}` queries."""
    return _cached_cut(text, where) if len(text) <= MOST_CACHED else _cut(text, where)


@lru_cache(maxsize=2048)
def _cached_cut(text: str, where: str) -> tuple[Piece, ...]:
    return _cut(text, where)


def _cut(text: str, where: str) -> tuple[Piece, ...]:
    found: list[Piece] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$${", i):
            literal.append("${")
            i += 3
        elif text.startswith("${", i):
            end = _closing(text, i + 2, where)
            if literal:
                found.append(Piece("".join(literal)))
                literal = []
            source = text[i + 2 : end]
            found.append(Piece(source, compiled(source, where)))
            i = end + 1
        else:
            literal.append(text[i])
            i += 1
    if literal:
        found.append(Piece("".join(literal)))
    return tuple(found)


def _closing(text: str, start: int, where: str) -> int:
    """The index of the `}` that ends the `${` before `start` (braces and quotes inside are skipped)."""
    depth, quote, i = 0, "", start
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in _QUOTES:
            quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    raise ExpressionError(f"{where}: '${{' at character {start - 2} has no closing '}}'")


@lru_cache(maxsize=4096)
def _compile(source: str) -> ParsedResult:
    return jmespath.compile(source)


def compiled(source: str, where: str = "") -> ParsedResult:
    if not source.strip():
        raise ExpressionError(f"{where}: '${{}}' is empty; write a query such as ${{steps.read.result}}")
    if len(source) > MAX_EXPRESSION:
        raise ExpressionError(f"{where}: a ${{…}} query may hold {MAX_EXPRESSION} characters, this one {len(source)}")
    try:
        parsed = _compile(source)
        unknown = sorted(_functions(parsed.parsed) - FUNCTIONS)
    except JMESPathError as exc:
        detail = " ".join(str(exc).split())
        raise ExpressionError(f"{where}: ${{{source[:80]}}} is not a JMESPath query: {detail}") from None
    except RecursionError:
        raise ExpressionError(f"{where}: ${{…}} is nested too deeply") from None
    if unknown:
        raise ExpressionError(
            f"{where}: ${{{source[:80]}}} calls {', '.join(unknown)}, which JMESPath does not have; "
            "its functions are the ones of jmespath.org (length, join, keys, …)"
        )
    return parsed


def _functions(node: Mapping[str, Any]) -> set[str]:
    names = {str(node.get("value"))} if node.get("type") == "function_expression" else set()
    for child in node.get("children") or []:
        names |= _functions(child)
    return names


def check(template: Any, where: str, depth: int = 0) -> Iterator[tuple[str, ParsedResult]]:
    """Every query in `template` with where it is, parsed; ExpressionError for the first that cannot be."""
    if depth > MAX_DEPTH:
        raise ExpressionError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(template, str):
        for piece in pieces(template, where):
            if piece.expression is not None:
                yield where, piece.expression
    elif isinstance(template, Mapping):
        for key, value in template.items():
            yield from check(value, f"{where}.{key}", depth + 1)
    elif isinstance(template, list):
        for index, value in enumerate(template):
            yield from check(value, f"{where}[{index}]", depth + 1)


def has_queries(template: Any) -> bool:
    """Whether `template` holds any `${…}` (a template without one is its own value)."""
    if isinstance(template, str):
        return "${" in template
    if isinstance(template, Mapping):
        return any(has_queries(value) for value in template.values())
    if isinstance(template, list):
        return any(has_queries(value) for value in template)
    return False


def render(template: Any, context: Mapping[str, Any], where: str = "") -> Any:
    """`template` with every `${…}` replaced by its value over `context` (JSON values only)."""
    if isinstance(template, str):
        if "${" not in template:
            return template
        parts = pieces(template, where)
        if len(parts) == 1 and parts[0].expression is not None:
            return _search(parts[0], context, where)
        text = "".join(p.text if p.expression is None else _text(_search(p, context, where)) for p in parts)
        if len(text) > MAX_TEXT:
            raise ExpressionError(f"{where}: the text built is {len(text)} characters, more than {MAX_TEXT}")
        return text
    if isinstance(template, Mapping):
        return {key: render(value, context, f"{where}.{key}") for key, value in template.items()}
    if isinstance(template, list):
        return [render(value, context, f"{where}[{index}]") for index, value in enumerate(template)]
    return template


def _search(piece: Piece, context: Mapping[str, Any], where: str) -> Any:
    assert piece.expression is not None
    try:
        return piece.expression.search(context)
    except JMESPathError as exc:
        raise ExpressionError(f"{where}: ${{{piece.text[:80]}}} failed: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise ExpressionError(f"{where}: ${{{piece.text[:80]}}} went too deep") from None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def heads(expression: ParsedResult) -> Iterator[tuple[str, ...]]:
    """The paths of fields the query reads from the top of its context (`steps.read.result` → that path).

    Only positions evaluated against the top count: a filter's or a projection's right side reads each
    element, not the context."""
    yield from _heads(expression.parsed)


_ALL_CHILDREN = {
    "function_expression",
    "multi_select_list",
    "multi_select_dict",
    "key_val_pair",
    "comparator",
    "and_expression",
    "or_expression",
    "not_expression",
}
_LEFT_CHILD = {"projection", "filter_projection", "value_projection", "flatten", "pipe", "index_expression"}


def _heads(node: Mapping[str, Any]) -> Iterator[tuple[str, ...]]:
    path = _path(node)
    if path is not None:
        yield path
        return
    kind, children = node.get("type"), node.get("children") or []
    if kind in _ALL_CHILDREN:
        for child in children:
            yield from _heads(child)
    elif kind in _LEFT_CHILD or kind == "subexpression":
        if children:  # the rest reads what the left side gave (each element, for a projection)
            yield from _heads(children[0])
    elif kind == "current":
        yield ()


def _path(node: Mapping[str, Any]) -> tuple[str, ...] | None:
    kind = node.get("type")
    if kind == "field":
        return (str(node.get("value")),)
    if kind == "subexpression":
        children = node.get("children") or []
        first = _path(children[0]) if children else None
        if first is None:
            return None
        rest: list[str] = list(first)
        for child in children[1:]:
            if child.get("type") != "field":
                break
            rest.append(str(child.get("value")))
        return tuple(rest)
    if kind == "index_expression":
        children = node.get("children") or []
        return _path(children[0]) if children else None
    return None

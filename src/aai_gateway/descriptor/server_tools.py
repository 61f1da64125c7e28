"""What a tool an MCP server lists must be to be served: a valid name and a schema the gateway can check.

A server's `tools/list` is hostile input. A tool whose name is not an MCP tool name, or whose input
schema is not a JSON object, nests too deeply, has too many parts, has a pattern no engine reads, is not
a Draft-07 schema, or refers back to itself without end, is left out with the reason (`problem`); the
server's other tools serve. A pattern the gateway's linear-time engine does not run (lookaround,
backreferences) is noted, and the tool serves with that pattern left to the server. Every check here is
bounded in size (`MAX_DEPTH`, `MAX_PARTS`) and time (`CHECK_SECONDS`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import referencing.exceptions
from jsonschema.exceptions import best_match

from aai_gateway.descriptor.regexes import Refused, compile_regex
from aai_gateway.descriptor.safe_schema import SAFE_META, SafeValidator, TooSlow, deadline
from aai_gateway.problems import describe, json_type, pointer, short

TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
"""SEP-986 (MCP 2025-11-25): 1 to 128 ASCII letters, digits, `_`, `-` and `.` (the SDK's rule too)."""
MAX_DEPTH = 64
"""Deepest nesting of objects and arrays in a tool's schema."""
MAX_PARTS = 20_000
"""Most objects, arrays and values in a tool's schema."""
CHECK_SECONDS = 0.5
"""Time one tool's schema may take to check."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """`problem`: why the tool is left out, or None; `notes`: what is served but not checked."""

    problem: str | None = None
    notes: tuple[str, ...] = ()


def name_problem(name: Any) -> str | None:
    """Why `name` is no MCP tool name, or None when it is one."""
    if not isinstance(name, str):
        return f"its name is {json_type(name)}, not a string"
    if TOOL_NAME.fullmatch(name) is None:
        return f"its name {short(name)} is not an MCP tool name (1 to 128 of A-Z a-z 0-9 _ - .)"
    return None


_VERDICTS: dict[tuple[str, str], Verdict] = {}
"""Verdicts by schema text: a server lists the same schemas again after each change of its list."""
MAX_VERDICTS = 4096


def schema_verdict(schema: Any, what: str = "input schema") -> Verdict:
    """Whether `schema` is one the gateway can check arguments against, in bounded time."""
    try:
        key = (what, json.dumps(schema, sort_keys=True))
    except (ValueError, TypeError, RecursionError):
        return _verdict(schema, what)
    known = _VERDICTS.get(key)
    if known is None:
        known = _verdict(schema, what)
        if len(_VERDICTS) >= MAX_VERDICTS:
            _VERDICTS.clear()
        _VERDICTS[key] = known
    return known


def _verdict(schema: Any, what: str) -> Verdict:
    if not isinstance(schema, Mapping):
        return Verdict(f"its {what} is {json_type(schema)}, not a JSON object")
    shape = _shape(schema)
    if isinstance(shape, str):
        return Verdict(f"its {what} {shape}")
    notes: list[str] = []
    for at, found in _refused(shape):
        if not found.usable:
            return Verdict(f"its {what} at {pointer(at)}: {found.message}")
        notes.append(f"{what} at {pointer(at)}: {found.message}")
    kind = schema.get("type", "object")
    if kind != "object" and not (isinstance(kind, list) and "object" in kind):
        return Verdict(f"its {what} describes {short(kind)}, not an object of named arguments")
    try:
        with deadline(CHECK_SECONDS):
            error = best_match(SAFE_META.iter_errors(schema))
            if error is not None:
                where = pointer(list(error.absolute_path))
                return Verdict(f"its {what} is not a valid JSON Schema at {where}: {describe(error)}")
            for _ in SafeValidator(schema).iter_errors({}):
                pass
    except RecursionError:
        return Verdict(f"its {what} refers back to itself without end ($ref)")
    except referencing.exceptions.Unresolvable as exc:
        return Verdict(f"its {what} has a $ref leading nowhere ({exc})")
    except TooSlow:
        return Verdict(f"its {what} took more than {CHECK_SECONDS:g} s to check")
    return Verdict(None, tuple(notes))


def refused_patterns(schema: Mapping[str, Any]) -> list[tuple[list[str | int], Refused]]:
    """The patterns of `schema` that are not run, by where they are (none when it is too big to look at)."""
    shape = _shape(schema)
    return [] if isinstance(shape, str) else _refused(shape)


def _refused(shape: list[tuple[list[str | int], str]]) -> list[tuple[list[str | int], Refused]]:
    found = [(at, compile_regex(pattern)) for at, pattern in shape]
    return [(at, regex) for at, regex in found if isinstance(regex, Refused)]


def _shape(schema: Mapping[str, Any]) -> list[tuple[list[str | int], str]] | str:
    """The schema's patterns, by where they are, walked without recursion; or what makes it too big."""
    patterns: list[tuple[list[str | int], str]] = []
    pending: list[tuple[Any, list[str | int]]] = [(schema, [])]
    parts = 0
    while pending:
        node, at = pending.pop()
        parts += 1
        if parts > MAX_PARTS:
            return f"has more than {MAX_PARTS} parts"
        if len(at) > MAX_DEPTH:
            return f"is nested more than {MAX_DEPTH} levels deep (at {pointer(at[:8])}/…)"
        if isinstance(node, Mapping):
            if isinstance(node.get("pattern"), str):
                patterns.append(([*at, "pattern"], node["pattern"]))
            keyed = node.get("patternProperties")
            if isinstance(keyed, Mapping):
                patterns.extend(([*at, "patternProperties", str(k)], str(k)) for k in keyed)
            pending.extend((value, [*at, str(key)]) for key, value in node.items())
        elif isinstance(node, list):
            pending.extend((value, [*at, i]) for i, value in enumerate(node))
    return patterns

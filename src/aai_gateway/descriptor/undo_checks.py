"""Checks of a tool's `undo` a schema cannot say, each a problem at a JSON pointer.

The undo tool and the `before` read are tools of the same binding; every `${…}` parses and reads only
what an undo is given (`args`, `result`, and `before` where a read is declared; a read's own arguments
see `args` alone); arguments written as plain values fit the called tool's parameters, and none is
missing or unknown. A `before` that is not read-only, and an undo on a read-only tool, are warnings.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import referencing.exceptions

from aai_gateway import expressions
from aai_gateway.descriptor.safe_schema import InvalidPattern, SafeValidator, TooSlow, deadline
from aai_gateway.descriptor.tool_checks import parameter_names
from aai_gateway.problems import Problem, describe, pointer

Path = list[str | int]

CHECK_SECONDS = 0.5
"""Time the check of one undo's plain values against a tool's parameters may take."""

READS = {
    "args": "the step's arguments",
    "result": "its result",
    "before": "the result of the before read",
}


def undo_problems(
    tools: Sequence[Any], index: int, at: Path, source: str, extra: frozenset[str] = frozenset()
) -> list[Problem]:
    """Problems of the `undo` of `tools[index]` (a binding's raw tool list; the tool is at `at`).

    `extra` names arguments the binding adds to every tool (a DBus instance argument such as `player`)."""
    tool = tools[index]
    undo = tool.get("undo") if isinstance(tool, Mapping) else None
    if not isinstance(undo, Mapping):
        return []
    by_name = {t["name"]: t for t in tools if isinstance(t, Mapping) and isinstance(t.get("name"), str)}
    here = [*at, "undo"]
    found: list[Problem] = []
    if _read_only(tool):
        found.append(
            Problem(source, pointer(here), "the tool is marked read-only, so it has nothing to undo", "warning")
        )
    before = undo.get("before")
    reads = ("args", "result", "before") if isinstance(before, Mapping) else ("args", "result")
    found += _call_problems(undo, by_name, here, source, reads=reads, extra=extra)
    if isinstance(before, Mapping):
        found += _call_problems(before, by_name, [*here, "before"], source, reads=("args",), extra=extra)
        read = by_name.get(before.get("tool"))
        if read is not None and not _read_only(read):
            found.append(
                Problem(
                    source,
                    pointer([*here, "before", "tool"]),
                    f"'{before['tool']}' is not marked read-only (readOnlyHint); a before read should change nothing",
                    "warning",
                )
            )
    return found


def _read_only(tool: Mapping[str, Any]) -> bool:
    hints = tool.get("annotations")
    return isinstance(hints, Mapping) and hints.get("readOnlyHint") is True


def _call_problems(
    call: Mapping[str, Any],
    tools: Mapping[str, Mapping[str, Any]],
    at: Path,
    source: str,
    *,
    reads: Sequence[str],
    extra: frozenset[str],
) -> list[Problem]:
    """A call (`{tool, args}`): its tool exists, its queries read only `reads`, its arguments fit the tool."""
    name = call.get("tool")
    target = tools.get(name) if isinstance(name, str) else None
    found: list[Problem] = []
    if target is None:
        listed = ", ".join(sorted(tools)) or "none"
        message = f"'{name}' is not a tool of this app on this platform; its tools are: {listed}"
        found.append(Problem(source, pointer([*at, "tool"]), message))
    args = call.get("args") or {}
    found += list(_query_problems(args, [*at, "args"], source, reads))
    if target is not None and isinstance(args, Mapping):
        found += _argument_problems(args, target, str(name), [*at, "args"], source=source, extra=extra)
    return found


def _query_problems(template: Any, at: Path, source: str, reads: Sequence[str]) -> Iterator[Problem]:
    for where, text in _strings(template, at):
        if text is None:
            yield Problem(source, pointer(where), f"is nested deeper than {expressions.MAX_DEPTH} levels")
            continue
        try:
            queries = [query for _, query in expressions.check(text, "")]
        except expressions.ExpressionError as exc:
            yield Problem(source, pointer(where), str(exc).removeprefix(": "))
            continue
        for query in queries:
            for head in expressions.heads(query):
                if head and head[0] not in reads:
                    yield Problem(source, pointer(where), _reads_message(head[0], reads))


def _reads_message(head: str, reads: Sequence[str]) -> str:
    given = ", ".join(f"{key} ({READS[key]})" for key in reads)
    if head == "before":
        return f"reads 'before', but no before read is declared (undo.before); the queries here read {given}"
    return f"reads '{head}', which is not given here; the queries here read {given}"


def _strings(node: Any, where: Path, depth: int = 0) -> Iterator[tuple[Path, str | None]]:
    """Each string in `node` with where it is; None where `node` nests too deeply to be a template."""
    if depth > expressions.MAX_DEPTH:
        yield where, None
        return
    if isinstance(node, str):
        yield where, node
    elif isinstance(node, Mapping):
        for key, value in node.items():
            yield from _strings(value, [*where, key], depth + 1)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, [*where, index], depth + 1)


def _argument_problems(
    args: Mapping[str, Any], tool: Mapping[str, Any], name: str, at: Path, *, source: str, extra: frozenset[str]
) -> list[Problem]:
    """Arguments the tool does not take, required ones not given, and plain values its parameters refuse."""
    schema = tool.get("parameters", tool.get("inputSchema"))
    if not isinstance(schema, Mapping):
        return []
    found: list[Problem] = []
    known = parameter_names(schema)
    if known is not None:
        listed = ", ".join(sorted(known)) or "none"
        for key in args:
            if key not in known and key not in extra:
                message = f"'{key}' is not a parameter of '{name}'; its parameters are: {listed}"
                found.append(Problem(source, pointer([*at, key]), message))
    required = schema.get("required")
    for key in required if isinstance(required, list) else []:
        if isinstance(key, str) and key not in args:
            found.append(Problem(source, pointer(at), f"'{name}' requires '{key}', which is not given"))
    plain = {k: v for k, v in args.items() if not expressions.has_queries(v) and k not in extra}
    try:
        with deadline(CHECK_SECONDS):
            errors = [e for e in SafeValidator(dict(schema)).iter_errors(plain) if e.validator != "required"]
    except (TooSlow, RecursionError, referencing.exceptions.Unresolvable, InvalidPattern):
        return found  # a schema that cannot be applied is reported where it is written
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        if error.absolute_path or error.validator != "additionalProperties":
            message = f"does not fit '{name}': {describe(error)}"
            found.append(Problem(source, pointer([*at, *error.absolute_path]), message))
    return found

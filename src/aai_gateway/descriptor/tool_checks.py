"""Checks of one tool a schema cannot say, each a problem at a JSON pointer: `$ref`s in its parameters that lead
nowhere or back to where they started, `${param}` placeholders naming no parameter, and a DBus tool that is both a
method and a property.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote

from aai_gateway.descriptor.subschemas import Schemas
from aai_gateway.problems import Problem, pointer, short

Path = list[str | int]

SCRIPTED = frozenset({"applescript", "jxa"})
"""Automations whose `script` is checked by its own reader (placeholders in comments are left alone there)."""

SAME_PLACE = ("allOf", "anyOf", "oneOf")
"""Keywords whose subschemas apply to the value itself: a `$ref` loop through them never ends."""

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
"""`templates.PLACEHOLDER`, which this layer may not import (a test keeps the two equal)."""

NOT_TEMPLATES = frozenset(
    {"name", "description", "parameters", "inputSchema", "returns", "timeout", "annotations", "undo"}
)


def ref_problems(schema: Any, at: Path, source: str) -> list[Problem]:
    """`$ref`s that are not local, point to nothing, or loop back to themselves without going deeper."""
    problems: list[Problem] = []
    for where, node in _subschemas(schema, []):
        ref = node.get("$ref")
        if ref is None:
            continue
        if not isinstance(ref, str) or not ref.startswith("#"):
            problems.append(
                Problem(source, pointer([*at, *where, "$ref"]), f"{short(ref)} is not a local reference (#/...)")
            )
        elif _target(schema, ref) is None:
            problems.append(Problem(source, pointer([*at, *where, "$ref"]), f"{short(ref)} points to nothing"))
        elif _loops(schema, node):
            problems.append(
                Problem(
                    source,
                    pointer([*at, *where, "$ref"]),
                    f"{short(ref)} refers back to itself without going deeper, so no value can ever be checked",
                )
            )
    return problems


def _subschemas(node: Any, where: Path, depth: int = 0) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    if depth > 64:
        return
    if isinstance(node, Mapping):
        yield where, node
        for key, value in node.items():
            if key in ("enum", "const", "default", "examples"):
                continue
            yield from _subschemas(value, [*where, key], depth + 1)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _subschemas(value, [*where, index], depth + 1)


def _target(root: Any, ref: str) -> Any:
    node = root
    for token in unquote(ref[1:]).split("/")[1:] if ref[1:] else []:
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def _loops(root: Any, start: Mapping[str, Any]) -> bool:
    """Whether following `$ref`s and same-place keywords from `start` comes back to a schema already on the way."""
    seen: set[int] = set()
    todo: list[Any] = [start]
    while todo:
        node = todo.pop()
        if not isinstance(node, Mapping):
            continue
        if id(node) in seen:
            if node is start:
                return True
            continue
        seen.add(id(node))
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            todo.append(_target(root, ref))
            continue
        for key in SAME_PLACE:
            parts = node.get(key)
            todo.extend(parts if isinstance(parts, list) else [])
        todo.extend(node[k] for k in ("not", "if", "then", "else") if isinstance(node.get(k), Mapping))
    return False


def parameter_names(schema: Any) -> set[str] | None:
    """The parameters a tool declares; None when any name is welcome (pattern properties)."""
    if not isinstance(schema, Mapping):
        return set()
    resolved = Schemas(schema).resolve(schema)
    if resolved.get("patternProperties"):
        return None
    props = resolved.get("properties")
    declared = set(props) if isinstance(props, Mapping) else set()
    required = resolved.get("required")
    return declared | ({r for r in required if isinstance(r, str)} if isinstance(required, list) else set())


def placeholder_problems(tool: Mapping[str, Any], automation: str, at: Path, source: str) -> list[Problem]:
    """`${name}` placeholders in a tool's templates that name no parameter of the tool."""
    known = parameter_names(tool.get("parameters", tool.get("inputSchema")))
    if known is None:
        return []
    problems: list[Problem] = []
    for where, text in _strings(tool, []):
        if where[0] in NOT_TEMPLATES or (automation in SCRIPTED and where[-1] == "script"):
            continue
        for name in sorted(set(PLACEHOLDER.findall(text)) - known):
            listed = ", ".join(sorted(known)) or "none"
            problems.append(
                Problem(
                    source,
                    pointer([*at, *where]),
                    f"the placeholder ${{{name}}} is not a parameter of this tool; parameters are: {listed}",
                )
            )
    return problems


def _strings(node: Any, where: Path) -> Iterator[tuple[Path, str]]:
    if isinstance(node, str):
        yield where, node
    elif isinstance(node, Mapping):
        for key, value in node.items():
            yield from _strings(value, [*where, key])
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, [*where, index])


def dbus_problems(tool: Mapping[str, Any], at: Path, source: str) -> list[Problem]:
    if "method" in tool and "property" in tool:
        return [Problem(source, pointer([*at, "property"]), "a DBus tool calls a method or reads a property, not both")]
    return []


def hint_problems(tool: Mapping[str, Any], at: list[str | int], source: str) -> list[Problem]:
    """A tool marked both read-only and destructive."""
    hints = tool.get("annotations") or {}
    if hints.get("readOnlyHint") is True and hints.get("destructiveHint") is True:
        return [
            Problem(
                source,
                pointer([*at, "annotations"]),
                "a tool cannot be both read-only and destructive; drop one of readOnlyHint, destructiveHint",
            )
        ]
    return []

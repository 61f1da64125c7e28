"""Keys a descriptor's schema does not know, most often misspellings (`timeut`): warnings, never errors.

Descriptors in the wild carry extra keys, so the schemas allow them; a key is reported only where the
schema lists the keys of an object (`properties`) and leaves other keys open (no
`additionalProperties`). Free-form places are never entered: parameter and return schemas, headers,
body and query templates, intent extras. Keys starting with `x-` (extensions) or `$` (`$schema`,
`$comment`) are left alone. Shape C takes snake_case spellings too, so there a key is known when its
snake_case form is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from difflib import get_close_matches
from typing import Any

from aai_gateway.descriptor.formats.camel import snake
from aai_gateway.descriptor.model import Shape
from aai_gateway.problems import Problem, pointer

FREE_FORM = frozenset(
    {
        "parameters",
        "inputSchema",
        "returns",
        "headers",
        "default_headers",
        "defaultHeaders",
        "body",
        "query_params",
        "extras",
    }
)
"""Keys whose values belong to the descriptor's author (JSON Schemas, templates, maps), whatever the schema."""


def unknown_keys(doc: Any, schema: Mapping[str, Any], shape: Shape, source: str) -> list[Problem]:
    spelling: Callable[[str], str] = snake if shape == "camel" else str
    found: list[Problem] = []
    stack: list[tuple[Any, Mapping[str, Any], list[str | int]]] = [(doc, schema, [])]
    while stack:
        value, sub, at = stack.pop()
        if isinstance(value, dict):
            props = sub.get("properties")
            if not isinstance(props, Mapping):
                continue
            known = {spelling(k): v for k, v in props.items()}
            for key, item in value.items():
                inner = known.get(spelling(key))
                if inner is None and "additionalProperties" not in sub and not key.startswith(("x-", "$")):
                    found.append(Problem(source, pointer([*at, key]), _message(key, props), "warning"))
                elif isinstance(inner, Mapping) and key not in FREE_FORM and spelling(key) not in FREE_FORM:
                    stack.append((item, inner, [*at, key]))
        elif isinstance(value, list):
            items = sub.get("items")
            if isinstance(items, Mapping):
                stack.extend((item, items, [*at, i]) for i, item in enumerate(value))
    return sorted(found, key=lambda p: p.pointer)


def _message(key: str, props: Mapping[str, Any]) -> str:
    close = get_close_matches(key, list(props), n=1, cutoff=0.6)
    if not close:
        lowered = {k.lower(): k for k in props}
        close = [lowered[key.lower()]] if key.lower() in lowered else []
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown key '{key}'{hint}"

"""`${param}` placeholders, resolved to values, never to source code.

A string that is exactly one placeholder takes the argument's JSON value and type (`"${count}"` → 3);
a placeholder inside a longer string is replaced by the argument's text. Lists and objects are
resolved item by item; anything else is a constant. Executors hand the results to their platform
as data (typed DBus arguments, HTTP bodies), so an argument can never change what runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


class Missing(LookupError):
    """A template names an argument that was not given and has no default."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def names(template: Any) -> set[str]:
    """Every argument a template refers to."""
    if isinstance(template, str):
        return set(PLACEHOLDER.findall(template))
    if isinstance(template, list):
        return set().union(*(names(t) for t in template)) if template else set()
    if isinstance(template, Mapping):
        return set().union(*(names(t) for t in template.values())) if template else set()
    return set()


def render(template: Any, args: Mapping[str, Any]) -> Any:
    """Resolve `template` against `args`; raises `Missing` for an argument that is not there."""
    if isinstance(template, str):
        whole = PLACEHOLDER.fullmatch(template)
        if whole:
            return _value(whole.group(1), args)
        return PLACEHOLDER.sub(lambda m: _text(_value(m.group(1), args)), template)
    if isinstance(template, list):
        return [render(t, args) for t in template]
    if isinstance(template, Mapping):
        return {k: render(v, args) for k, v in template.items()}
    return template


def _value(name: str, args: Mapping[str, Any]) -> Any:
    if name not in args:
        raise Missing(name)
    return args[name]


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)

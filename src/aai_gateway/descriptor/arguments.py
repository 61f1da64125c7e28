"""The validator of a call's arguments: Draft-07, with `pattern` matched as JSON Schema means it.

JSON Schema's patterns are ECMA-262 regular expressions, in which `$` matches only at the end of the
text. jsonschema runs them with Python's `re.search`, in which `$` also matches before a final
newline, so `^[a-z]+$` took "host\\n". Here each `$` outside a character class and not escaped
becomes `\\Z`, Python's end of the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from jsonschema import Draft7Validator, ValidationError, validators
from jsonschema.protocols import Validator


@lru_cache(maxsize=1024)
def python_pattern(pattern: str) -> re.Pattern[str]:
    """`pattern` compiled with `$` meaning the end of the text; raises re.error as `re.compile` does."""
    out: list[str] = []
    at, in_class = 0, False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            out.append(pattern[at : at + 2])
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            start = at + 1 + (pattern[at + 1 : at + 2] == "^")
            first = start + (pattern[start : start + 1] == "]")  # Python takes a `]` first in a class literally
            out.append(pattern[at:first])
            at, in_class = first, True
            continue
        elif char == "$":
            char = r"\Z"
        out.append(char)
        at += 1
    return re.compile("".join(out))


def _pattern(validator: Validator, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not python_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


ArgumentsValidator: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]  # jsonschema leaves it untyped
    Draft7Validator, {"pattern": _pattern}
)
"""Draft-07 with the `pattern` above, for the arguments of calls."""

"""Draft-07 validation of schemas nobody here wrote, bounded in time.

`SafeValidator` is jsonschema's Draft-07 validator with its regular expressions (`pattern`,
`patternProperties`, the property names `additionalProperties` weeds out, `format: regex`) run by
`regexes` in linear time instead of by Python's backtracking `re`, and with every keyword checking a
deadline (`deadline`) before it runs, so a check on huge arguments ends when its time is up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from jsonschema import Draft7Validator, FormatChecker, ValidationError, validators
from jsonschema._utils import extras_msg

from aai_gateway.descriptor.regexes import Refused, TooCostly, compile_regex

Keyword = Callable[[Any, Any, Any, Any], Any]

_DEADLINE: ContextVar[float | None] = ContextVar("schema_check_deadline", default=None)


class TooSlow(Exception):
    """The check's time ran out (`deadline`)."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every keyword of a `SafeValidator` check started within `seconds` raises `TooSlow` after them."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def matches(pattern: str, text: str) -> bool | None:
    """Whether `pattern` finds a match in `text`: None when the gateway cannot tell (a pattern it does not run,
    or a text too long for it); raises nothing."""
    found = compile_regex(pattern)
    if isinstance(found, Refused):
        return None
    try:
        return found.search(text)
    except TooCostly:
        return None


def _search(pattern: str, text: str) -> bool | ValidationError:
    """`matches` for a check: a pattern left to the app matches; a text too long for it is an error."""
    found = compile_regex(pattern)
    if isinstance(found, Refused):
        if found.usable:
            return True
        raise InvalidPattern(found.message)
    try:
        return found.search(text)
    except TooCostly as exc:
        return ValidationError(str(exc), validator="too costly")


class InvalidPattern(ValueError):
    """A schema's pattern that no engine reads: the schema is broken, not the arguments."""


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(instance, str) or not isinstance(pattern, str):
        return
    found = _search(pattern, instance)
    if isinstance(found, ValidationError):
        yield found
    elif not found:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(instance, dict) or not isinstance(patterns, Mapping):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            found = _search(pattern, key)
            if isinstance(found, ValidationError):
                yield found
            elif found:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [key for key in instance if key not in properties and not any(_search(p, key) is True for p in patterns)]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif extra is False and extras:
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {', '.join(map(repr, patterns))}")
        else:
            names, verb = extras_msg(sorted(extras, key=str))
            yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


def _timed(keyword: Keyword) -> Keyword:
    def timed(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        due = _DEADLINE.get()
        if due is not None and time.monotonic() > due:
            raise TooSlow
        return keyword(validator, value, instance, schema)

    return timed


def _is_regex(value: object) -> bool:
    found = compile_regex(value) if isinstance(value, str) else None
    return not (isinstance(found, Refused) and not found.usable)


def safe_formats(base: FormatChecker) -> FormatChecker:
    """`base` with `regex` read as `regexes` reads patterns (compiled by RE2, never run by `re`)."""
    checker = FormatChecker(base.checkers)
    checker.checks("regex")(_is_regex)
    return checker


_KEYWORDS: dict[str, Keyword] = {
    **Draft7Validator.VALIDATORS,
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}

SafeValidator: Any = validators.extend(  # type: ignore[no-untyped-call]  # jsonschema leaves `extend` untyped
    Draft7Validator,
    {name: _timed(keyword) for name, keyword in _KEYWORDS.items()},
    format_checker=safe_formats(Draft7Validator.FORMAT_CHECKER),
)
"""Draft-07, with linear-time regular expressions and a deadline (see the module's docstring)."""

SAFE_META = SafeValidator(Draft7Validator.META_SCHEMA, format_checker=SafeValidator.FORMAT_CHECKER)
"""Checks that a schema is a Draft-07 schema, its `pattern`s compiled by RE2 rather than `re`."""

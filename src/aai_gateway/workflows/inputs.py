"""A saved workflow's inputs as a person gives them: the fields its inputs schema declares, and text
(`key=value` on the command line, a form field in the UI) turned into the value of the type each names.

Nothing here checks the values against the schema beyond their type: the run does that, as it does
for an agent's arguments, so a person and an agent get the same answer for the same values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aai_gateway.text import printable

MAX_VALUE_CHARS = 1_000_000
"""Characters one typed value (or a whole JSON object of them) may have."""
BOOLEANS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


@dataclass(frozen=True, slots=True)
class Field:
    """One input as a form or a listing shows it."""

    name: str
    type: str
    """The schema's type as words (`string`, `number | null`, `any`)."""
    required: bool
    description: str = ""
    default: Any = None
    has_default: bool = False
    choices: tuple[Any, ...] = ()
    """The schema's `enum`, if it has one."""

    @property
    def widget(self) -> str:
        """How a form asks for it: choice, boolean, integer, number, string, or json (anything else)."""
        if self.choices:
            return "choice"
        return self.type if self.type in ("boolean", "integer", "number", "string") else "json"

    def text(self) -> str:
        """`below (number, default 20)`: a listing's words for it."""
        notes = [self.type]
        if self.required:
            notes.append("required")
        if self.has_default:
            notes.append(f"default {shown(self.default)}")
        if self.choices:
            notes.append("one of " + ", ".join(shown(c) for c in self.choices))
        return f"{printable(self.name)} ({'; '.join(notes)})"


def fields(schema: Mapping[str, Any]) -> list[Field]:
    """The inputs an inputs schema declares, required ones first (in the schema's order otherwise)."""
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required_list = schema.get("required")
    required = set(required_list) if isinstance(required_list, list) else set()
    found = []
    for name, raw in props.items():
        spec = raw if isinstance(raw, Mapping) else {}
        kind = spec.get("type", "any")
        enum = spec.get("enum")
        found.append(
            Field(
                str(name),
                " | ".join(map(str, kind)) if isinstance(kind, list) else str(kind),
                name in required,
                str(spec.get("description", "")),
                spec.get("default"),
                "default" in spec,
                tuple(enum) if isinstance(enum, list) else (),
            )
        )
    return sorted(found, key=lambda f: not f.required)


def typed(field: Field | None, name: str, text: str) -> Any:
    """`text` as the value `field` takes (a JSON value when the schema names no simple type, or does not
    declare `name`); ValueError saying what was wrong with which input."""
    if len(text) > MAX_VALUE_CHARS:
        raise ValueError(f"{name}: the value is longer than {MAX_VALUE_CHARS:,} characters")
    if field is not None and field.choices:
        for choice in field.choices:
            if text == (choice if isinstance(choice, str) else json.dumps(choice)):
                return choice
        raise ValueError(f"{name}: must be one of {', '.join(shown(c) for c in field.choices)}, got {shown(text)}")
    kind = field.type if field is not None else "any"
    if kind == "string":
        return text
    if kind == "boolean":
        if text.strip().lower() not in BOOLEANS:
            raise ValueError(f"{name}: must be true or false, got {shown(text)}")
        return BOOLEANS[text.strip().lower()]
    if kind == "integer":
        try:
            return int(text.strip())
        except ValueError:
            raise ValueError(f"{name}: must be a whole number, got {shown(text)}") from None
    if kind == "number":
        try:
            number = float(text.strip())
        except ValueError:
            raise ValueError(f"{name}: must be a number, got {shown(text)}") from None
        if not math.isfinite(number):
            raise ValueError(f"{name}: must be a finite number, got {shown(text)}")
        return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    try:
        return parse_json(text)
    except ValueError as exc:
        if kind in ("object", "array"):
            raise ValueError(f"{name}: must be JSON ({kind}): {exc}") from None
        return text  # a type the schema does not name (or several): text that is no JSON is a string


def from_pairs(schema: Mapping[str, Any], pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Named texts (`below=20`) as the arguments of a run, each typed by the inputs schema."""
    by_name = {f.name: f for f in fields(schema)}
    return {name: typed(by_name.get(name), name, text) for name, text in pairs}


def parse_json(text: str) -> Any:
    """A JSON text, bounded in size and depth; ValueError in one line."""
    if len(text) > MAX_VALUE_CHARS:
        raise ValueError(f"is longer than {MAX_VALUE_CHARS:,} characters")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ValueError("is nested too deeply") from None


def shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return printable(text)[:80]

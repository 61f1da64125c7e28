"""Problems found in files a person wrote (descriptors, config), phrased for that person.

A `Problem` names where (file and JSON pointer) and what, in one line. `describe` turns a
jsonschema error into such a sentence; schemas may add an `x-hint` to any subschema to say what a
valid value looks like.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from jsonschema import SchemaError, ValidationError
from jsonschema.exceptions import best_match

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    pointer: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = f"{self.file}#{self.pointer}" if self.pointer else self.file
        label = "" if self.severity == "error" else f"{self.severity}: "
        return f"{where}: {label}{self.message}"

    def as_dict(self) -> dict[str, str]:
        return {
            "file": self.file,
            "pointer": self.pointer,
            "message": self.message,
            "severity": self.severity,
        }


def pointer(parts: Iterable[str | int]) -> str:
    """RFC 6901 JSON pointer for a path; the empty path is the document itself ("")."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


END = r"(?!\n)"
"""What the shipped schemas' patterns end with after `$`: jsonschema matches with `re.search`, where `$`
also matches before a final newline; not shown in messages."""
_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "null",
}

_TYPE_WORDS = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "boolean": "a boolean (true or false)",
    "integer": "an integer",
    "number": "a number",
    "null": "null",
}


def json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def short(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        text = f"a {json_type(value).removeprefix('an ').removeprefix('a ')} too large to show"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _types(expected: str | Sequence[str]) -> str:
    names = [expected] if isinstance(expected, str) else list(expected)
    return " or ".join(_TYPE_WORDS.get(n, n) for n in names)


def describe(error: ValidationError | SchemaError) -> str:
    """One plain sentence for a jsonschema error, without the location (the pointer carries it)."""
    v, inst = error.validator, error.instance
    expected: Any = error.validator_value
    schema: Any = error.schema
    hint = schema.get("x-hint") if isinstance(schema, dict) else None
    if v == "required":
        missing = [k for k in expected if isinstance(inst, dict) and k not in inst]
        text = "missing required field " + ", ".join(f"'{k}'" for k in missing or expected)
    elif v == "type":
        text = f"must be {_types(expected)}, got {json_type(inst)} ({short(inst)})"
    elif v == "enum":
        text = f"must be one of {', '.join(short(x) for x in expected)}; got {short(inst)}"
    elif v == "const":
        text = f"must be {short(expected)}; got {short(inst)}"
    elif v == "pattern":
        text = f"{short(inst)} is not in the expected form"
        if not hint:
            text += f" (pattern {str(expected).removesuffix(END)})"
    elif v == "additionalProperties":
        extra = sorted(set(inst) - set(schema.get("properties", {}))) if isinstance(inst, dict) else []
        text = "unknown field " + ", ".join(f"'{k}'" for k in extra)
    elif v == "minItems":
        text = f"needs at least {expected} item{'s' if expected != 1 else ''}"
    elif v == "maxItems":
        text = f"allows at most {expected} items"
    elif v == "minLength":
        text = "must not be empty" if expected == 1 else f"must have at least {expected} characters"
    elif v == "maxLength":
        text = f"must have at most {expected} characters"
    elif v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        words = {
            "minimum": "at least",
            "maximum": "at most",
            "exclusiveMinimum": "more than",
            "exclusiveMaximum": "less than",
        }
        text = f"must be {words[v]} {expected}; got {short(inst)}"
    elif v == "minProperties":
        text = "must not be empty"
    elif v == "uniqueItems":
        text = "must not repeat items"
    elif v == "format":
        text = f"{short(inst)} is not a valid {expected}"
    elif v in ("oneOf", "anyOf"):
        branches = expected if isinstance(expected, list) else []
        if branches and all(isinstance(b, dict) and list(b) == ["required"] for b in branches):
            options = " or ".join(f"'{k}'" for b in branches for k in b["required"])
            text = f"missing required field {options}"
        elif error.context:
            return describe(best_match(error.context))
        else:
            text = f"{short(inst)} does not match any allowed form"
    elif v == "not":
        text = f"{short(inst)} is not allowed here"
    else:
        text = error.message
    return f"{text}; {hint}" if hint else text

"""A short, readable and safe summary of a call's arguments, for the person asked to consent."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

SECRET_KEY = re.compile(
    r"pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|authori[sz]ation|cookie|credential|private[_-]?key",
    re.IGNORECASE,
)
REDACTED = "[redacted]"
MAX_VALUE = 80
MAX_ARGS = 8


def summarize(args: Mapping[str, Any], parameters: Mapping[str, Any] | None = None) -> tuple[tuple[str, str], ...]:
    """(name, shown value) pairs: secret-looking keys and fields the schema marks sensitive redacted,
    long values cut, control and bidirectional characters escaped so the text cannot disguise itself."""
    marked = _sensitive(parameters or {})
    pairs = []
    for key, value in list(args.items())[:MAX_ARGS]:
        shown = REDACTED if key in marked or SECRET_KEY.search(key) else _shown(_redact(value))
        pairs.append((safe(key, MAX_VALUE), shown))
    if len(args) > MAX_ARGS:
        pairs.append(("…", f"{len(args) - MAX_ARGS} more"))
    return tuple(pairs)


def as_text(pairs: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{key}: {value}" for key, value in pairs) or "no arguments"


def _sensitive(parameters: Mapping[str, Any]) -> set[str]:
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping):
        return set()
    return {
        name
        for name, spec in properties.items()
        if isinstance(spec, Mapping) and (spec.get("x-sensitive") is True or spec.get("format") == "password")
    }


def _redact(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: REDACTED if SECRET_KEY.search(str(k)) else _redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return safe(text, MAX_VALUE)


def safe(text: str, limit: int = MAX_VALUE) -> str:
    """`text` cut to `limit` characters, control and bidirectional characters written as escapes."""
    cut = text if len(text) <= limit else text[: limit - 1] + "…"
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in cut)

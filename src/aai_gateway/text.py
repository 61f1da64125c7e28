"""Strings that cannot be written as UTF-8: JSON's `\\uXXXX` escapes can name half of a surrogate pair.

Such a string is no text an app can take, a history can keep or a log can write, so the gateway refuses
it by the field that holds it, and shows it, wherever it shows it, with the half written as an escape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aai_gateway import json_text

_LONE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with every lone surrogate written as its `\\uXXXX` escape (text that encodes as UTF-8)."""
    if text.isascii():
        return text
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def encodable(text: str) -> bool:
    return text.isascii() or _LONE.search(text) is None


def unencodable(value: Any, where: str) -> str | None:
    """The first field of `value` (named from `where`, as `args.a.0`) whose name or text holds a lone
    surrogate, or None when every string in it encodes as UTF-8."""
    if _encodes(value):  # the common case, checked at C speed; the walk below only names the field
        return None
    pending: list[tuple[Any, str]] = [(value, where)]
    while pending:
        item, path = pending.pop()
        if isinstance(item, str):
            if not encodable(item):
                return path
        elif isinstance(item, Mapping):
            for key, child in reversed(list(item.items())):
                name = f"{path}.{printable(str(key))}"
                if not encodable(str(key)):
                    return name
                pending.append((child, name))
        elif isinstance(item, list | tuple):
            pending.extend((child, f"{path}.{i}") for i, child in reversed(list(enumerate(item))))
    return None


def _encodes(value: Any) -> bool:
    try:
        _ENCODER(value).encode()
    except UnicodeEncodeError:
        return False
    except (ValueError, TypeError, RecursionError):
        return False  # let the walk decide
    return True


_ENCODER = json_text.encoder(default=str)

"""Every form a secret travels in, so that redaction cuts it whichever form a server echoes.

A key sent in a query string comes back percent-encoded when a server echoes the URL (`+` as `%2B`,
or `+` for a space, in upper or lower case hex); a value inside JSON text comes back escaped (`\\"`,
`\\\\`, `\\u00e9`), and inside a Python traceback as its repr; basic auth travels as base64 of
`user:password`, which a server may echo decoded.

The secrets the gateway resolves for others to hold (an MCP server's `$env` and `$keyring` values) are
`remember`ed the moment they are resolved, so that every text the gateway writes down (its log, its
history) is cut of them too: a process-wide set held in memory only, never written anywhere.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, overload
from urllib.parse import quote, quote_plus

MIN_LENGTH = 4
"""Shorter values are not cut out of text: they would mask noise."""
REDACTED = "[redacted]"


@lru_cache(maxsize=256)
def forms(secret: str) -> tuple[str, ...]:
    """`secret` as sent, percent-encoded (both `quote` forms and `quote_plus`, upper and lower case hex),
    JSON-escaped (once and twice), as Python's repr shows it, base64, and, when it is basic auth's base64
    of `user:password`, that pair and the password; longest first, each at least `MIN_LENGTH` characters."""
    found = {secret}
    for text in (secret, *_basic(secret)):
        found.add(text)
        for encoded in (quote(text, safe=""), quote(text), quote_plus(text), quote_plus(text, safe="/")):
            found.add(encoded)
            found.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), encoded))
        for escaped in (_json(text), _json(text, ascii_only=True)):
            found.add(escaped)
            found.add(_json(escaped))
        found.add(repr(text)[1:-1])
        raw = text.encode("utf-8", "surrogatepass")
        found.add(base64.b64encode(raw).decode())
        found.add(base64.b64encode(raw).decode().rstrip("="))
        found.add(base64.urlsafe_b64encode(raw).decode().rstrip("="))
    return tuple(sorted((f for f in found if len(f) >= MIN_LENGTH), key=len, reverse=True))


def all_forms(secrets: Iterable[str]) -> list[str]:
    """The forms of every secret, longest first (a secret containing another is cut whole)."""
    found = {form for secret in secrets if len(secret) >= MIN_LENGTH for form in forms(secret)}
    return sorted(found, key=len, reverse=True)


def redact(value: Any, secrets: Iterable[str]) -> Any:
    """`value` with every secret replaced by `REDACTED`, in every form it travels in, in strings and object
    keys at any depth."""
    found = all_forms(secrets)
    return cut(value, found) if found else value


@overload
def cut(value: str, found: Sequence[str]) -> str: ...
@overload
def cut(value: Any, found: Sequence[str]) -> Any: ...
def cut(value: Any, found: Sequence[str]) -> Any:
    """`value` with each of `found` (forms as `all_forms` gives them, longest first) replaced by `REDACTED`."""
    if isinstance(value, str):
        for secret in found:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, list):
        return [cut(v, found) for v in value]
    if isinstance(value, dict):
        return {cut(k, found): cut(v, found) for k, v in value.items()}
    return value


_lock = threading.Lock()
_remembered: frozenset[str] = frozenset()
_remembered_forms: tuple[str, ...] = ()


def remember(secrets: Iterable[str]) -> None:
    """Cut `secrets` out of every text the gateway writes down from now on (see `remembered`)."""
    global _remembered, _remembered_forms
    with _lock:
        more = _remembered | {s for s in secrets if len(s) >= MIN_LENGTH}
        if more != _remembered:
            _remembered, _remembered_forms = more, tuple(all_forms(more))


def remembered() -> tuple[str, ...]:
    """Every form of every secret `remember`ed, longest first; the same tuple until one more is remembered."""
    return _remembered_forms


def _json(text: str, *, ascii_only: bool = False) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)[1:-1]


def _basic(secret: str) -> list[str]:
    """The `user:password` pair and the password inside `secret`, if it is a basic auth value."""
    token = secret.removeprefix("Basic ").strip()
    if len(token) < 8 or not re.fullmatch(r"[A-Za-z0-9+/_-]+=*", token):
        return []
    try:
        pair = base64.b64decode(
            token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token else None
        )
        text = pair.decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return []
    if ":" not in text or not text.isprintable():
        return []
    return [text, text.split(":", 1)[1]]

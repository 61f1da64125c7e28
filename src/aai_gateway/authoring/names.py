"""Names the generators write: tool names in snake_case and appIds, from DBus, sdef and OpenAPI names."""

from __future__ import annotations

import re

APP_ID = re.compile(r"[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+")
"""An appId, whole (`fullmatch`: a `$` would let a final newline through)."""
MAX_TOOL_NAME = 64


def snake(name: str, limit: int | None = None) -> str:
    """`PlayPause` → `play_pause`, `GetURL` → `get_url`, `add note` → `add_note`, `get-task` → `get_task`.

    Never empty, and starts with a letter or '_'; with `limit`, cut to that many characters.
    """
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()
    if not text:
        return "_"
    return (text if text[0].isalpha() else "_" + text)[:limit]


def _segment(text: str) -> str:
    """One appId segment: lowercase letters, digits and single '-', starting with a letter (or empty)."""
    seg = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return seg if not seg or seg[0].isalpha() else "x-" + seg


def app_id_for(dotted: str, last: str | None = None, *, unnamed: str = "app") -> str:
    """A valid appId from a reverse-DNS name (a bus name, a bundle id): `com.Example.My_App` → `com.example.my-app`.

    Each dot-separated part becomes a segment (other characters as '-', `x-` before a digit), empty ones
    are dropped, and `local` goes in front while fewer than two remain. With `last` (an API's title), the
    id ends with it as one segment, `unnamed` when nothing of it is left, and a part of `dotted` equal to
    it just before it is not repeated: `com.example.api` and `API` give `com.example.api`.
    """
    segments = [s for s in map(_segment, dotted.split(".")) if s]
    if last is not None:
        end = _segment(last) or unnamed
        if segments and segments[-1] == end:
            segments.pop()
        segments.append(end)
    if len(segments) < 2:
        segments.insert(0, "local")
    return ".".join(segments)

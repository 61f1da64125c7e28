"""Values worked out once per object and kept while there is room: what a tool's arguments come to for DBus,
the schemas below each key for redaction, a tool's argument check.

The objects are a descriptor's tools and schemas: dicts and frozen dataclasses, dear to hash and compare,
and the same few are used call after call. They are found by identity, and an entry keeps its object, so
that the id of an object gone (a rescan, a web app fetched again) is never taken for another's.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")

LIMIT = 4096
"""Entries kept before every one is dropped and the work starts over."""


class PerObject(Generic[V]):
    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._entries: dict[tuple[int, Hashable], tuple[object, V]] = {}

    def get(self, owner: object, detail: Hashable = None) -> V | None:
        """The value kept for `owner` (and `detail`), or None."""
        found = self._entries.get((id(owner), detail))
        return found[1] if found is not None and found[0] is owner else None

    def put(self, owner: object, value: V, detail: Hashable = None) -> V:
        """Keep `value` for `owner` (and `detail`) and return it; when full, every entry is dropped first."""
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[(id(owner), detail)] = (owner, value)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

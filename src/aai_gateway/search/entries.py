"""The library's and stores' entries ranked for a person (`library WORD`, the UI's Library page) with the
ranking agents get from `aai_search`: the same analysis, fields and "nothing fits"."""

from __future__ import annotations

from collections.abc import Iterable

from aai_gateway.library.entries import Entry
from aai_gateway.library.search import fold
from aai_gateway.search.index import SearchIndex
from aai_gateway.search.sources import library

MOST = 200
"""Operations looked at; their apps, best first, are the entries listed."""


def ranked(entries: Iterable[Entry], query: str) -> list[Entry]:
    """The entries whose operations fit `query`, best first; every entry, by name, for an empty query."""
    listed = list(entries)
    if not query.strip():
        return sorted(listed, key=lambda e: (fold(e.name), e.app_id))
    by_id = {e.app_id: e for e in listed}
    found = SearchIndex(library(listed, set())).search(query, MOST)
    order: dict[str, None] = {}
    for hit in found.hits:
        for app_id in (hit.operation.app_id, *hit.also_in):
            order.setdefault(app_id)
    return [by_id[app_id] for app_id in order if app_id in by_id]

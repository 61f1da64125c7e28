"""Finding entries by what a user would type: a name in any language, an alias, a word of a description.

Matching ignores case and accents. Every word of the query must match somewhere in an entry; each word
scores by where it matched best (the id or a name or alias exactly, then their start, then inside them,
then a tool's name or one of its aliases, then the description or the reason the entry is in), and
entries are ranked by the sum, then by name.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable, Sequence

from aai_gateway.library.entries import Entry

EXACT = 100
START = 60
INSIDE = 40
TOOL = 25
TEXT = 10


def fold(text: str) -> str:
    """Lowercase without accents: `Bibliothèque` and `bibliotheque` match."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def search(entries: Iterable[Entry], query: str) -> list[Entry]:
    """The entries matching every word of `query`, best first; all of them, by name, for an empty query."""
    words = [fold(w) for w in query.split()]
    listed = list(entries)
    if not words:
        return sorted(listed, key=lambda e: (fold(e.name), e.app_id))
    scored = []
    for entry in listed:
        total = 0
        for word in words:
            points = score(entry, word)
            if points == 0:
                break
            total += points
        else:
            scored.append((total, entry))
    scored.sort(key=lambda pair: (-pair[0], fold(pair[1].name), pair[1].app_id))
    return [entry for _, entry in scored]


def score(entry: Entry, word: str) -> int:
    app_id = fold(entry.app_id)
    labels = [fold(n.text) for n in entry.names] + [fold(a) for a in entry.aliases]
    labels += [app_id, app_id.rsplit(".", 1)[-1]]
    if word in labels:
        return EXACT
    if any(label.startswith(word) or f" {word}" in label for label in labels):
        return START
    if any(word in label for label in labels):
        return INSIDE
    if any(word in words for words in tool_words(entry)):
        return TOOL
    if word in fold(entry.description) or word in fold(entry.why):
        return TEXT
    return 0


def tool_words(entry: Entry) -> list[str]:
    """The entry's tool names and, where its descriptor is at hand, their aliases (in any language), folded."""
    words = [fold(tool) for tool in entry.tools]
    if entry.descriptor is not None:
        tools = (tool for binding in entry.descriptor.bindings.values() for tool in binding.tools)
        words += [fold(alias) for tool in tools for alias in tool.aliases]
    return words


def near(entries: Sequence[Entry], app_id: str, n: int = 3) -> list[str]:
    """Ids close to a mistyped one, or entries whose names or aliases match it."""
    ids = [e.app_id for e in entries]
    close = difflib.get_close_matches(app_id, ids, n=n, cutoff=0.6)
    found = [e.app_id for e in search(entries, app_id.rsplit(".", 1)[-1])[:n]]
    return list(dict.fromkeys([*close, *found]))[:n]

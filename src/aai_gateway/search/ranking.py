"""BM25F over the fields of an operation, the lexical half of search.

Each field has a weight and its own length normalisation (Robertson's BM25F): a word in a tool's name
counts more than one in its description, and a long description does not drown a short name. A query word
matches a document word when they share a term (the word or one of its stems, see `analysis`); it scores by
the best term it shares. `coverage` says which share of the query's weight (by idf) matched at all, the
measure of whether anything fits.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aai_gateway.search.analysis import Token

K1 = 1.0
"""How fast more occurrences of a word stop adding to a score."""


@dataclass(frozen=True, slots=True)
class Field:
    weight: float
    length_norm: float
    """BM25's b: 0 ignores the field's length, 1 divides by it fully."""


FIELDS: Mapping[str, Field] = {
    "tool": Field(2.0, 0.5),  # the tool's name (split) and its aliases
    "app": Field(1.0, 0.5),  # the app's names in every language, aliases and id
    "text": Field(1.0, 0.75),  # the tool's description
    "params": Field(1.0, 0.5),  # parameter names
    "param_text": Field(0.8, 0.75),  # parameter descriptions and allowed values
    "context": Field(0.3, 0.75),  # the app's description and why the library has it
}

Analysed = Mapping[str, Sequence[Token]]
"""A document as each field's tokens."""


@dataclass(frozen=True, slots=True)
class Scored:
    doc: int
    score: float
    coverage: float


class Lexical:
    """The index of one set of documents; built once, read by every search (never changed in place)."""

    def __init__(self, docs: Sequence[Analysed]) -> None:
        self.size = len(docs)
        lengths = {name: [sum(1 for _ in doc.get(name, ())) for doc in docs] for name in FIELDS}
        average = {name: (sum(v) / len(v) if v and sum(v) else 1.0) for name, v in lengths.items()}
        postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for number, doc in enumerate(docs):
            weighted: dict[str, float] = defaultdict(float)
            for name, spec in FIELDS.items():
                field_tokens = doc.get(name, ())
                if not field_tokens:
                    continue
                norm = 1 - spec.length_norm + spec.length_norm * lengths[name][number] / average[name]
                for token in field_tokens:
                    for term in token:
                        weighted[term] += spec.weight / norm
            for term, tf in weighted.items():
                postings[term].append((number, tf))
        self._postings = dict(postings)

    def idf(self, term: str) -> float:
        df = len(self._postings.get(term, ()))
        return math.log(1 + (self.size - df + 0.5) / (df + 0.5))

    def search(self, query: Sequence[Token]) -> list[Scored]:
        """Every document sharing a term with `query`, with its score and coverage (unordered)."""
        scores: dict[int, float] = defaultdict(float)
        matched: dict[int, float] = defaultdict(float)
        unique = list(dict.fromkeys(query))
        total = 0.0
        for token in unique:
            best: dict[int, float] = {}
            weight = max(self.idf(term) for term in token)
            total += weight
            for term in token:
                idf = self.idf(term)
                for number, tf in self._postings.get(term, ()):
                    gain = idf * tf * (K1 + 1) / (tf + K1)
                    if gain > best.get(number, 0.0):
                        best[number] = gain
            for number, gain in best.items():
                scores[number] += gain
                matched[number] += weight
        if not total:
            return []
        return [Scored(number, score, matched[number] / total) for number, score in scores.items()]

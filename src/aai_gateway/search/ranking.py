"""BM25F over the fields of an operation, the lexical half of search.

Each field has a weight and its own length normalisation (Robertson's BM25F): a word in a tool's name
counts more than one in its description, and a long description does not drown a short name. A query word
matches a document word when they share a term (the word or one of its stems, see `analysis`); it scores by
the best term it shares. `coverage` says which share of the query's weight (by idf) matched at all, the
measure of whether anything fits.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
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
    """The index of one set of documents; built once, read by every search (never changed in place).

    Postings are kept as two compact arrays per term (document numbers and weighted frequencies): a
    couple of megabytes for thousands of operations, where tuples would take tens.
    """

    def __init__(self, docs: Iterable[Analysed]) -> None:
        counted: list[dict[str, tuple[int, Counter[str]]]] = []
        for doc in docs:
            fields = {}
            for name in FIELDS:
                field_tokens = doc.get(name, ())
                if field_tokens:
                    fields[name] = (len(field_tokens), Counter(term for token in field_tokens for term in token))
            counted.append(fields)
        self.size = len(counted)
        totals = {name: sum(fields[name][0] for fields in counted if name in fields) for name in FIELDS}
        average = {name: (totals[name] / self.size if totals[name] else 1.0) for name in FIELDS}
        docs_of: dict[str, array[int]] = {}
        weights_of: dict[str, array[float]] = {}
        for number, fields in enumerate(counted):
            weighted: dict[str, float] = defaultdict(float)
            for name, (length, terms) in fields.items():
                spec = FIELDS[name]
                norm = 1 - spec.length_norm + spec.length_norm * length / average[name]
                for term, count in terms.items():
                    weighted[term] += count * spec.weight / norm
            for term, tf in weighted.items():
                if term not in docs_of:
                    docs_of[term], weights_of[term] = array("I"), array("f")
                docs_of[term].append(number)
                weights_of[term].append(tf)
        self._docs = docs_of
        self._weights = weights_of

    def idf(self, term: str) -> float:
        found = self._docs.get(term)
        df = len(found) if found is not None else 0
        return math.log(1 + (self.size - df + 0.5) / (df + 0.5))

    def search(self, query: Sequence[Token]) -> list[Scored]:
        """Every document sharing a term with `query`, with its score and coverage (unordered)."""
        scores: dict[int, float] = defaultdict(float)
        matched: dict[int, float] = defaultdict(float)
        total = 0.0
        for token in dict.fromkeys(query):
            best: dict[int, float] = {}
            weight = max(self.idf(term) for term in token)
            total += weight
            for term in token:
                docs = self._docs.get(term)
                if docs is None:
                    continue
                idf = self.idf(term)
                for number, tf in zip(docs, self._weights[term], strict=True):
                    gain = idf * tf * (K1 + 1) / (tf + K1)
                    if gain > best.get(number, 0.0):
                        best[number] = gain
            for number, gain in best.items():
                scores[number] += gain
                matched[number] += weight
        if not total:
            return []
        return [Scored(number, score, matched[number] / total) for number, score in scores.items()]

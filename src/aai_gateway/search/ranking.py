"""BM25F over the fields of an operation, the lexical half of search.

Each field has a weight and its own length normalisation (Robertson's BM25F): a word in a tool's name
counts more than one in its description, and a long description does not drown a short name. A query word
matches a document word when they share a term (the word or one of its stems, see `analysis`); it scores by
the best term it shares. Two neighbouring query words found side by side in one text of a field (in the
sequential dependence model's way: Metzler and Croft, 2005) add `PAIR_WEIGHT` of what such a word would: "current
weather" is said better by `get_current_weather` than by a text that has "current" and "weather" apart.
`coverage` says which share of the query's weight (by idf) matched at all, the
measure of whether anything fits.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from aai_gateway.search.analysis import Token, pairs

K1 = 1.0
"""How fast more occurrences of a word stop adding to a score."""
PAIR_WEIGHT = 0.25
"""What two neighbouring words found side by side add, against one word found."""


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

Analysed = Mapping[str, Sequence[Sequence[Token]]]
"""A document as each field's texts (a tool's name, then each alias), each as its words' tokens."""


@dataclass(frozen=True, slots=True)
class Scored:
    doc: int
    score: float
    coverage: float


class Lexical:
    """The index of one set of documents; built once, read by every search (never changed in place).

    Postings are kept in two flat arrays (document numbers and weighted frequencies), each term's a slice
    of them: a megabyte or two for thousands of operations, half what an array per term takes (an object
    each), and a tenth of what tuples would.
    """

    def __init__(self, docs: Iterable[Analysed]) -> None:
        analysed = list(docs)
        self.size = len(analysed)
        lengths = {name: array("I", (sum(map(len, doc.get(name, ()))) for doc in analysed)) for name in FIELDS}
        average = {name: (sum(counts) / self.size if sum(counts) else 1.0) for name, counts in lengths.items()}
        slot: dict[str, int] = {}
        found_term, found_doc, found_tf = array("I"), array("I"), array("f")
        for number, doc in enumerate(analysed):
            weighted: dict[str, float] = defaultdict(float)
            for name, spec in FIELDS.items():
                texts = doc.get(name, ())
                if not lengths[name][number]:
                    continue
                norm = 1 - spec.length_norm + spec.length_norm * lengths[name][number] / average[name]
                terms = Counter(term for words in texts for token in words for term in token)
                terms.update(pair for words in texts for pair in pairs(words))
                for term, count in terms.items():
                    weighted[term] += count * spec.weight / norm
            for term, tf in weighted.items():
                found_term.append(slot.setdefault(term, len(slot)))
                found_doc.append(number)
                found_tf.append(tf)
        # Group the postings by term (a counting sort), keeping each term's documents in order.
        starts = array("I", bytes(4 * (len(slot) + 1)))
        for term_slot in found_term:
            starts[term_slot + 1] += 1
        for at in range(len(slot)):
            starts[at + 1] += starts[at]
        place = array("I", starts)
        self._docs = array("I", bytes(4 * len(found_doc)))
        self._weights = array("f", bytes(4 * len(found_doc)))
        for term_slot, number, tf in zip(found_term, found_doc, found_tf, strict=True):
            self._docs[place[term_slot]] = number
            self._weights[place[term_slot]] = tf
            place[term_slot] += 1
        self._slot = slot
        self._starts = starts

    def _postings(self, term: str) -> tuple[array[int], array[float]]:
        at = self._slot.get(term)
        if at is None:
            return array("I"), array("f")
        start, end = self._starts[at], self._starts[at + 1]
        return self._docs[start:end], self._weights[start:end]

    def idf(self, term: str) -> float:
        at = self._slot.get(term)
        df = self._starts[at + 1] - self._starts[at] if at is not None else 0
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
                idf = self.idf(term)
                for number, tf in zip(*self._postings(term), strict=True):
                    gain = idf * tf * (K1 + 1) / (tf + K1)
                    if gain > best.get(number, 0.0):
                        best[number] = gain
            for number, gain in best.items():
                scores[number] += gain
                matched[number] += weight
        if not total:
            return []
        for pair in dict.fromkeys(pairs(query)):
            idf = self.idf(pair)
            for number, tf in zip(*self._postings(pair), strict=True):
                scores[number] += PAIR_WEIGHT * idf * tf * (K1 + 1) / (tf + K1)
        return [Scored(number, score, matched[number] / total) for number, score in scores.items()]

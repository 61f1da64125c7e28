"""One index over every operation an agent could use, and the search over it.

The lexical score (BM25F, `ranking`) is fused with the semantic one when a model is loaded: each is
divided by its best value among the candidates and the two are added, the semantic one weighted by
`SEMANTIC_WEIGHT`. Equal scores go to the operation the user has run successfully more often. Hits of
the same tool name from several apps fold into the best one (`also_in`), so five slots show five different
operations. When no operation matches every word of the query and the best hit is too weak (`MIN_MATCH`),
nothing fits, and search says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from aai_gateway.search.analysis import tokens
from aai_gateway.search.documents import Operation
from aai_gateway.search.ranking import Lexical
from aai_gateway.search.semantic import Embedder

SEMANTIC_WEIGHT = 0.4
CANDIDATES = 50
"""Best hits of each signal that are fused."""
MIN_MATCH = 1.0
"""The weakest lexical score that fits, in units of the idf of a word that one operation alone has: about
one rare word in a tool's name, or two in its description."""
WHOLE = 0.999
"""A query every word of which one operation matches fits, however common its words are."""
MIN_SIMILARITY = 0.35
"""The weakest semantic similarity that fits on its own, when the model is loaded."""
MAX_ALSO = 5
"""Apps named in `also_in`."""


@dataclass(frozen=True, slots=True)
class Hit:
    operation: Operation
    score: float
    also_in: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Found:
    hits: tuple[Hit, ...]
    fits: bool
    """False when the query matched nothing well enough (then `hits` is empty)."""


class SearchIndex:
    """Built once for a set of operations (off the event loop: analysis costs ~0.1 ms per operation)."""

    def __init__(
        self,
        operations: Sequence[Operation],
        embedder: Embedder | None = None,
    ) -> None:
        self.operations = tuple(operations)
        self._lexical = Lexical(op.analysed() for op in self.operations)
        self._embedder = embedder
        self._vectors = embedder.embed(self.semantic_texts) if embedder else None
        self._strong = math.log(1 + (len(self.operations) - 0.5) / 1.5) * MIN_MATCH

    @cached_property
    def semantic_texts(self) -> list[str]:
        """What a semantic signal reads of each operation, in order."""
        return [op.semantic_text() for op in self.operations]

    def search(
        self,
        query: str,
        limit: int = 5,
        successes: Mapping[tuple[str, str], int] | None = None,
        similarity: Mapping[int, float] | None = None,
    ) -> Found:
        """The best `limit` operations for `query`; equal scores go to the one with more `successes`.
        `similarity` is the semantic signal when it comes from elsewhere (`embeddings`): the cosine of the
        best operations (by their place in `operations`) with the query."""
        lexical = self._lexical.search(tokens(query))
        scored = {s.doc: s.score for s in lexical}
        best_lexical = max(scored.values(), default=0.0)
        whole = any(s.coverage >= WHOLE for s in lexical)
        similarity = dict(similarity or {})
        if not similarity and self._embedder is not None and self._vectors is not None and len(self.operations):
            row = self._vectors @ self._embedder.embed([query])[0]
            for doc in row.argsort()[::-1][:CANDIDATES].tolist():
                similarity[doc] = max(float(row[doc]), 0.0)
        best_similarity = max(similarity.values(), default=0.0)
        strong = whole or best_lexical >= self._strong or best_similarity >= MIN_SIMILARITY
        if not (scored or similarity) or not strong:
            return Found((), fits=False)
        candidates = set(sorted(scored, key=scored.__getitem__, reverse=True)[:CANDIDATES]) | set(similarity)
        fused = {
            doc: scored.get(doc, 0.0) / (best_lexical or 1.0)
            + SEMANTIC_WEIGHT * similarity.get(doc, 0.0) / (best_similarity or 1.0)
            for doc in candidates
        }
        ran = successes or {}

        def runs(doc: int) -> int:
            return ran.get((self.operations[doc].app_id, self.operations[doc].tool), 0)

        ranked = sorted(fused, key=lambda doc: (-round(fused[doc], 6), -runs(doc), doc))
        return Found(self._fold(ranked, fused, limit), fits=True)

    def _fold(self, ranked: list[int], fused: Mapping[int, float], limit: int) -> tuple[Hit, ...]:
        first: dict[str, int] = {}
        also: dict[str, list[str]] = {}
        for doc in ranked:
            op = self.operations[doc]
            if op.tool in first:
                others = also[op.tool]
                if len(others) < MAX_ALSO and op.app_id not in others:
                    others.append(op.app_id)
                continue
            if len(first) == limit:
                continue
            first[op.tool] = doc
            also[op.tool] = []
        return tuple(
            Hit(
                self.operations[doc],
                round(fused[doc], 4),
                tuple(a for a in also[name] if a != self.operations[doc].app_id),
            )
            for name, doc in first.items()
        )

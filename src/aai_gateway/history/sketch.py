"""Duration sketches: the call durations of one hour, app and tool in a compact blob, mergeable across
hours, that gives any percentile within 1 % of the exact one.

A DDSketch-style histogram with logarithmic slots: slot k > 0 holds the durations in
(LOWEST * GAMMA^(k-1), LOWEST * GAMMA^k] ms, and reports 2 * LOWEST * GAMMA^k / (GAMMA + 1), within
ALPHA (1 %) of every duration in it; slot 0 holds LOWEST and below. The slots run from LOWEST (0.1 µs)
to about 28 hours, SLOTS in all. A sketch keeps a 32-bit count per slot packed into one Python int (slot
k at bit 32 * k), so merging sketches is adding ints, done in C however many slots there are, where
DDSketch's own merge walks every slot in Python. Its blob is the run of slots from the first to the
last one used, 4 bytes each, or (slot, count) pairs of 6 bytes when they take half the bytes or less
(a few calls spread wide), after the first slot's number (or SPARSE) and the smallest and largest
duration, which bound what a percentile reports.

A percentile is nearest-rank, as the exact one it stands for: the slot holding the value of rank
ceil(q * n) (1-based), its value clamped to the smallest and largest duration. Why our own and not a
library (figures in docs/performance.md, "Duration sketches"): merging 720 hours of one tool took
86-420 ms with `ddsketch` (pure Python; protobuf blobs of 1-5 KB), 11-36 ms with `hdrhistogram`
(small zlib blobs, but integer values, and pbr and setuptools needed at run time) and 0.7-10 ms here,
where a 30-day read merges 720 hours of every tool.
"""

from __future__ import annotations

import math
import struct
import sys
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

ALPHA = 0.01
"""The relative error of a percentile."""
GAMMA = (1 + ALPHA) / (1 - ALPHA)
LOWEST = 1e-4
"""Milliseconds: durations at or below fall in slot 0."""
_LOG_GAMMA = math.log(GAMMA)
SLOTS = math.ceil(math.log(1e8 / LOWEST) / _LOG_GAMMA) + 1
"""Slots of a sketch: up to 1e8 ms (about 28 hours); longer durations fall in the last."""
WIDTH = 32
"""Bits of a slot's count: 4,294,967,295 calls of one tool in one slot of a range at most."""
_HEADER = struct.Struct("<Hdd")
_PAIR = struct.Struct("<HI")
SPARSE = 0x8000
"""Set in a blob's first field when it holds (slot, count) pairs rather than a run of counts."""
_SWAP = sys.byteorder == "big"
_ALL = (1 << (WIDTH * SLOTS)) - 1


def slot(ms: float) -> int:
    """The slot of a duration."""
    if not ms > LOWEST:  # NaN too
        return 0
    return min(SLOTS - 1, math.ceil(math.log(ms / LOWEST) / _LOG_GAMMA))


def slot_sql(column: str) -> str:
    """`slot` as an SQL expression of a column of durations: SQLite's `ln` and `ceil` are libm's, as
    `math.log` and `math.ceil` are, so each duration falls in the same slot. Computed by SQLite, with the
    interpreter's lock let go, rather than by a Python function called back for each row."""
    return (
        f"CASE WHEN {column} > {LOWEST!r} THEN min({SLOTS - 1}, CAST(ceil(ln({column} / {LOWEST!r}) / {_LOG_GAMMA!r}) "
        f"AS INTEGER)) ELSE 0 END"
    )


def value(k: int) -> float:
    """What slot `k` reports: within ALPHA of every duration in it."""
    return 0.0 if k <= 0 else 2 * LOWEST * GAMMA**k / (GAMMA + 1)


@dataclass(slots=True)
class Sketch:
    """Durations counted per slot; `counts` packs a WIDTH-bit count per slot."""

    counts: int = 0
    low: float = math.inf
    high: float = -math.inf

    def add(self, ms: float, times: int = 1) -> None:
        self.counts += times << (WIDTH * slot(ms))
        self.low, self.high = min(self.low, ms), max(self.high, ms)

    def add_slot(self, k: int, times: int, low: float, high: float) -> None:
        """`times` durations of slot `k`, the smallest `low` and the largest `high` (as SQL grouped them)."""
        self.counts += times << (WIDTH * k)
        self.low, self.high = min(self.low, low), max(self.high, high)

    def merge(self, other: Sketch) -> None:
        self.counts += other.counts
        self.low, self.high = min(self.low, other.low), max(self.high, other.high)

    def slot_counts(self) -> array[int]:
        found = array("I")
        if self.counts:  # a count carried past the last slot (4 billion calls in one) is dropped
            found.frombytes((self.counts & _ALL).to_bytes(WIDTH // 8 * SLOTS, "little"))
            if _SWAP:
                found.byteswap()
        return found

    @property
    def count(self) -> int:
        return sum(self.slot_counts())

    def percentiles(self, *fractions: float) -> tuple[float | None, ...]:
        """The nearest-rank percentile of each fraction (0.5, 0.95, ...); None for an empty sketch."""
        counts = self.slot_counts()
        total = sum(counts)
        if not total:
            return tuple(None for _ in fractions)
        ranks = sorted((max(0, math.ceil(f * total) - 1), i) for i, f in enumerate(fractions))
        found: list[float] = [0.0] * len(fractions)
        seen, k = 0, -1
        for rank, i in ranks:
            while seen <= rank:
                k += 1
                seen += counts[k]
            found[i] = min(self.high, max(self.low, value(k)))
        return tuple(found)

    def to_blob(self) -> bytes:
        counts = self.counts
        if not counts:
            return _HEADER.pack(0, 0.0, 0.0)
        first = ((counts & -counts).bit_length() - 1) // WIDTH
        last = (counts.bit_length() - 1) // WIDTH
        run = (counts >> (WIDTH * first)).to_bytes(WIDTH // 8 * (last - first + 1), "little")
        used = array("I", run)
        if _SWAP:
            used.byteswap()
        pairs = [(first + i, n) for i, n in enumerate(used) if n]
        if 2 * len(pairs) * _PAIR.size < len(run):  # a few calls spread wide: pairs, at half the size or less
            return _HEADER.pack(SPARSE, self.low, self.high) + b"".join(_PAIR.pack(*pair) for pair in pairs)
        return _HEADER.pack(first, self.low, self.high) + run

    @classmethod
    def of_blob(cls, blob: bytes) -> Sketch:
        return merged([blob])

    def subtract(self, other: Sketch) -> None:
        """Take `other`'s durations off (retention deleting calls); the smallest and largest stay as bounds."""
        self.counts -= other.counts


def merged(blobs: Iterable[object]) -> Sketch:
    """One sketch of many blobs; the shifts are done once per first slot. What is not a sketch's blob (a
    history written by something else) is left out."""
    by_first: dict[int, int] = {}
    low, high = math.inf, -math.inf
    unpack, size = _HEADER.unpack_from, _HEADER.size
    sparse: dict[int, int] = {}
    for blob in blobs:
        if not isinstance(blob, bytes) or len(blob) < size:
            continue
        first, small, large = unpack(blob)
        body = len(blob) - size
        if first == SPARSE and body % _PAIR.size == 0:
            for k, n in _PAIR.iter_unpack(blob[size:]):
                if k < SLOTS:
                    sparse[k] = sparse.get(k, 0) + n
        elif body % 4 == 0 and first + body // 4 <= SLOTS:
            by_first[first] = by_first.get(first, 0) + int.from_bytes(blob[size:], "little")
        else:
            continue
        if math.isfinite(small) and math.isfinite(large):
            low = min(low, small)
            high = max(high, large)
    for k, n in sparse.items():
        by_first[k] = by_first.get(k, 0) + n
    counts = sum(total << (WIDTH * first) for first, total in by_first.items())
    return Sketch(counts, low, high) if counts else Sketch()


def exact(durations: list[float], *fractions: float) -> tuple[float | None, ...]:
    """The exact nearest-rank percentiles of a list of durations (sorted here)."""
    if not durations:
        return tuple(None for _ in fractions)
    ordered = sorted(durations)
    return tuple(ordered[max(0, math.ceil(f * len(ordered)) - 1)] for f in fractions)

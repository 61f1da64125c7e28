"""Duration sketches: percentiles within 1 % of the exact nearest-rank ones on generated durations, the
same after merging hours' blobs (dense and sparse), and taking durations off again."""

from __future__ import annotations

import math
import random
import sqlite3
import struct
from contextlib import closing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aai_gateway.history.sketch import ALPHA, GAMMA, LOWEST, SLOTS, SPARSE, Sketch, exact, merged, slot, slot_sql, value

FRACTIONS = (0.5, 0.95, 0.99, 0.0, 1.0)
durations = st.lists(st.floats(min_value=1e-3, max_value=1e7, allow_nan=False), min_size=1, max_size=300)


def close(found: tuple[float | None, ...], expected: tuple[float | None, ...]) -> bool:
    return all(
        f is not None and e is not None and abs(f - e) <= ALPHA * e + 1e-12
        for f, e in zip(found, expected, strict=True)
    )


def sketch_of(values: list[float]) -> Sketch:
    sketch = Sketch()
    for ms in values:
        sketch.add(ms)
    return sketch


@given(durations)
def test_percentiles_are_within_one_percent_of_the_exact_ones(values: list[float]) -> None:
    assert close(sketch_of(values).percentiles(*FRACTIONS), exact(values, *FRACTIONS))


@settings(max_examples=50)
@given(st.lists(durations, min_size=1, max_size=30))
def test_merging_hours_gives_the_percentiles_of_all_their_durations(hours: list[list[float]]) -> None:
    blobs = [sketch_of(hour).to_blob() for hour in hours]
    every = [ms for hour in hours for ms in hour]
    together = merged(blobs)
    assert together.count == len(every)
    assert together.percentiles(*FRACTIONS) == sketch_of(every).percentiles(*FRACTIONS)
    assert close(together.percentiles(*FRACTIONS), exact(every, *FRACTIONS))


def test_real_looking_hours_720_of_them() -> None:
    """A month of hours of a busy tool: quick answers, slow GUI automation, and a tail."""
    rng = random.Random(4)  # noqa: S311 - made-up durations, the same each run
    hours = [
        [rng.lognormvariate(-2.5, 0.4) if rng.random() < 0.3 else rng.lognormvariate(5.0, 1.0) for _ in range(40)]
        for _ in range(720)
    ]
    together = merged(sketch_of(hour).to_blob() for hour in hours)
    assert close(together.percentiles(0.5, 0.95, 0.99), exact([ms for h in hours for ms in h], 0.5, 0.95, 0.99))


def test_blobs_are_sparse_for_a_few_calls_spread_wide_and_dense_else() -> None:
    few = sketch_of([0.05, 3.0, 4000.0]).to_blob()
    assert int.from_bytes(few[:2], "little") == SPARSE
    assert len(few) == 18 + 3 * 6
    many = sketch_of([1 + n / 100 for n in range(500)]).to_blob()
    assert int.from_bytes(many[:2], "little") == slot(1.0)
    median, largest = Sketch.of_blob(few).percentiles(0.5, 1.0)
    assert close((median,), (3.0,))
    assert largest == 4000.0  # clamped to the largest
    assert Sketch.of_blob(Sketch().to_blob()).percentiles(0.5) == (None,)


def test_taking_durations_off_and_edge_values() -> None:
    kept, gone = [1.0, 2.0, 3.0, 50.0], [7.0, 8.0]
    sketch = sketch_of(kept + gone)
    sketch.subtract(sketch_of(gone))
    assert sketch.counts == sketch_of(kept).counts
    assert close(sketch.percentiles(0.5, 1.0), (2.0, 50.0))
    zero = sketch_of([0.0, 0.0, -1.0, math.nan])
    assert zero.count == 4
    assert value(slot(1e12)) < 1e12  # beyond the last slot: bounded by the largest duration
    assert sketch_of([1e12]).percentiles(0.5) == (1e12,)


@pytest.mark.hostile("store")
def test_what_is_not_a_sketch_is_left_out() -> None:
    good = sketch_of([1.0, 2.0, 3.0]).to_blob()
    header = good[:18]
    bad = [
        b"",
        b"short",
        "text, not a blob",
        12345,
        None,
        (9999).to_bytes(2, "little") + good[2:],  # a first slot past the last
        header + b"\x01\x00\x00",  # counts cut short
        (SPARSE).to_bytes(2, "little") + good[2:18] + (60000).to_bytes(2, "little") + (5).to_bytes(4, "little"),
        (1).to_bytes(2, "little") + struct.pack("<dd", math.nan, math.inf) + b"\x01\x00\x00\x00",
        b"\x00\x00" + b"\xff" * 16 + b"\xff\xff\xff\xff" * 1000,
    ]
    together = merged([*bad, good])
    low, high = together.percentiles(0.0, 1.0)
    assert low is not None
    assert high is not None
    assert math.isfinite(low)
    assert math.isfinite(high)
    assert merged(bad[:8]).percentiles(0.5) == (None,)


def test_sqlite_puts_each_duration_in_the_slot_python_does() -> None:
    """The writer groups durations by slot in SQL: a duration in another slot than `Sketch.add` gives it would
    move a percentile. The edges of the slots are where the two could part."""
    rng = random.Random(7)  # noqa: S311 - made-up durations, the same each run
    edges = [LOWEST * GAMMA**k for k in range(SLOTS + 2)]
    values = [
        *(rng.lognormvariate(-1, 3) for _ in range(50_000)),
        *edges,
        *(math.nextafter(edge, 0) for edge in edges),
        *(math.nextafter(edge, math.inf) for edge in edges),
        *(0.0, -1.0, LOWEST, 5e-324, 1e8, 1e9, 1e300),
    ]
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.execute("CREATE TABLE calls (duration_ms REAL)")
        conn.executemany("INSERT INTO calls VALUES (?)", [(v,) for v in values])
        query = f"SELECT {slot_sql('duration_ms')} FROM calls ORDER BY rowid"  # noqa: S608 - our own expression
        found = [k for (k,) in conn.execute(query)]
    assert [(v, k) for v, k in zip(values, found, strict=True) if k != slot(v)] == []

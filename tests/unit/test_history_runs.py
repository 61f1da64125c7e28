"""Runs in the history: a record per step and undo pointing at its run, the migration that brought the
fields, the listing's entries, retention of a run with its steps, and the statistics that count steps."""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.descriptor import Tool
from aai_gateway.errors import AutomationFailed
from aai_gateway.history import HistoryStore, Record, Recorder, Redactor
from aai_gateway.history.record import RUN_APP
from aai_gateway.history.redact import MASK
from aai_gateway.history.store import SCHEMA_VERSION
from aai_gateway.history.success import success_rates
from tests.history_runs import STEPS, Step, nowhere, record_run

V2_DUMP = Path(__file__).with_name("history_v2.sql")
V3_DUMP = Path(__file__).with_name("history_v3.sql")
"""A history as aai-gateway wrote it with schema 3, before duration sketches."""
T0 = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)


def load(dump: Path, path: Path) -> None:
    """A history as an older aai-gateway left it, from its dump."""
    with sqlite3.connect(path) as conn:
        conn.executescript(dump.read_text())
    conn.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HistoryStore]:
    history = HistoryStore(tmp_path / "history.db", retention_days=36500)
    try:
        yield history
    finally:
        history.close()


def plain(call_id: str, at: datetime, **more: object) -> Record:
    fields: dict[str, object] = {
        "call_id": call_id,
        "time": at,
        "caller": "cli",
        "transport": "cli",
        "app": "dev.aai.echo",
        "tool": "echo",
        "args": {},
        "status": "ok",
        "duration_ms": 1.0,
    }
    fields.update(more)
    return Record(**fields)  # type: ignore[arg-type]


def test_a_schema_2_history_opens_keeps_its_rows_and_takes_runs(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    load(V2_DUMP, path)
    store = HistoryStore(path, retention_days=36500)
    try:
        store.start()
        kept = store.get("v2-asked")
        assert kept is not None
        assert (kept.app, kept.tool, kept.consent, kept.parent, kept.step) == (
            "org.example.notes",
            "add",
            "tool",
            None,
            None,
        )
        assert [r.call_id for r in store.query()] == ["v2-asked", "v2-failed", "v2-ok"]
        failed = store.get("v2-failed")
        assert failed is not None
        assert failed.error_type == "AUTOMATION_FAILED"
        since, until = datetime(2026, 11, 20, tzinfo=UTC), datetime(2026, 11, 21, tzinfo=UTC)
        assert {(t.app, t.tool, t.calls, t.errors) for t in store.stats(since, until).tools} == {
            ("dev.aai.echo", "echo", 1, 0),
            ("dev.aai.echo", "fail", 1, 1),
            ("org.example.notes", "add", 1, 0),
        }
        record_run(store, "run-1", datetime(2026, 11, 20, 12, 0, tzinfo=UTC))
        children, count = store.children("run-1")
        assert count == len(STEPS)
        assert [(c.step, c.parent) for c in children] == [(s.label, "run-1") for s in STEPS]
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
            indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
            plan = conn.execute("EXPLAIN QUERY PLAN SELECT id FROM calls WHERE parent = ? ORDER BY time", ("x",))
            details = " ".join(str(row[3]) for row in plan)
        conn.close()
        assert SCHEMA_VERSION == 5
        assert "calls_parent" in indexes
        assert not {"calls_durations", "calls_consent"} & indexes  # dropped by schema 4
        assert "USING INDEX calls_parent" in details or "USING COVERING INDEX calls_parent" in details
    finally:
        store.close()


def test_the_recorder_keeps_each_steps_run_and_label(store: HistoryStore) -> None:
    ids = record_run(store, "run-1", T0)
    run = store.get("run-1")
    assert run is not None
    assert (run.app, run.tool, run.status, run.parent, run.step) == (RUN_APP, "morning", "error", None, None)
    for call_id, step in zip(ids, STEPS, strict=True):
        child = store.get(call_id)
        assert child is not None
        assert (child.parent, child.step, child.app, child.tool) == ("run-1", step.label, step.app, step.tool)
        assert child.to_json()["parent"] == "run-1"
        assert child.to_json()["step"] == step.label
    recorder = Recorder(store, Redactor(), nowhere)
    pending = recorder.begin(
        "own", caller="c", transport="stdio", app="a", tool="t", args={}, parent="own", step="x" * 500
    )
    assert pending.parent is None, "a call cannot be a step of itself: it would be listed nowhere"
    assert pending.step is not None
    assert len(pending.step) == 200


def test_children_come_in_the_order_they_started(store: HistoryStore) -> None:
    # Steps are recorded as they end: the slow first step is written last.
    recorder = Recorder(store, Redactor(), nowhere)

    async def write() -> None:
        for n, label in ((2, "c"), (0, "a"), (1, "b")):
            pending = recorder.begin(
                f"s{n}", caller="c", transport="stdio", app="x", tool="y", args={}, parent="r", step=label
            )
            await recorder.ok(replace(pending, time=T0 + timedelta(seconds=n)), None, 1.0)

    asyncio.run(write())
    children, count = store.children("r")
    assert [c.step for c in children] == ["a", "b", "c"]
    assert count == 3
    assert [c.step for c in store.children("r", limit=2)[0]] == ["a", "b"]
    assert store.children("nothing") == ([], 0)


def test_a_listing_shows_a_run_once_with_its_steps_beneath(store: HistoryStore) -> None:
    write(store, [plain("before", T0 - timedelta(minutes=1))])
    record_run(store, "run-1", T0)
    record_run(store, "run-2", T0 + timedelta(minutes=5), steps=STEPS[:2], with_run=False)
    write(store, [plain("after", T0 + timedelta(minutes=10))])

    entries = store.entries()
    assert [e.record.call_id for e in entries] == ["after", "run-2-1", "run-2-0", "run-1", "before"]
    run = entries[3]
    assert run.steps == len(STEPS)
    assert [c.step for c in run.children] == [s.label for s in STEPS]
    assert not run.run_missing
    assert [e.run_missing for e in entries] == [False, True, True, False, False]
    assert store.count_entries() == 5
    assert store.count() == 2 + 1 + len(STEPS) + 2

    # a filter that matches a step shows its run, with its steps
    volume = store.entries(app="dev.aai.volume")
    assert [(e.record.call_id, e.steps) for e in volume] == [("run-1", len(STEPS))]
    assert store.count_entries(app="dev.aai.volume") == 1
    failed = store.entries(status="error")
    assert [e.record.call_id for e in failed] == ["run-1"]
    assert store.count_entries(status="error") == 1
    # the echo app's own calls, the run whose first step is echo, and the lone step of run-2
    echo = store.entries(app="dev.aai.echo")
    assert [e.record.call_id for e in echo] == ["after", "run-2-0", "run-1", "before"]
    assert store.count_entries(app="dev.aai.echo") == 4
    assert [e.record.call_id for e in store.entries(limit=2, offset=2)] == ["run-2-0", "run-1"]

    many = tuple(Step(f"notify[{n}]", "dev.aai.notes", "add", 1.0) for n in range(25))
    record_run(store, "big", T0 + timedelta(minutes=20), steps=many)
    big = store.entries(limit=1)[0]
    assert (big.record.call_id, len(big.children), big.steps, big.more) == ("big", 20, 25, 5)
    assert big.to_json()["childCount"] == 25
    assert len(big.to_json()["children"]) == 20


def test_retention_deletes_a_run_with_all_its_steps(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    keeping = HistoryStore(tmp_path / "history.db", retention_days=36500)
    # started 31 days ago minus 90 minutes, its steps an hour apart: two started before the 30-day
    # cutoff and three after it
    old = now - timedelta(days=30, minutes=90)
    record_run(keeping, "old", old, gap=timedelta(hours=1))
    record_run(keeping, "new", now - timedelta(days=1))
    write(keeping, [plain("lone", now - timedelta(days=31)), plain("recent", now - timedelta(hours=1))])
    keeping.close()
    store = HistoryStore(tmp_path / "history.db", retention_days=30)
    try:
        store.start()
        assert store.get("old") is None
        assert store.children("old") == ([], 0), "no step outlives its run"
        assert store.get("lone") is None
        assert store.children("new")[1] == len(STEPS)
        assert {e.record.call_id for e in store.entries()} == {"new", "recent"}
        assert store.count() == 1 + len(STEPS) + 1
        with sqlite3.connect(store.path) as conn:
            counted = conn.execute("SELECT sum(calls), sum(errors) FROM call_tools").fetchone()
            kept = conn.execute("SELECT count(*), sum(status = 'error') FROM calls").fetchone()
        conn.close()
        assert counted == kept, "the hourly counts lose the steps deleted with their run"
    finally:
        store.close()


def test_stats_count_each_step_as_a_call_of_its_app_and_a_run_once(store: HistoryStore) -> None:
    record_run(store, "run-1", T0)
    record_run(store, "run-2", T0 + timedelta(minutes=1), steps=STEPS[:3], workflow="plan")
    write(store, [plain("lone", T0 + timedelta(minutes=2))])
    found = store.stats(T0 - timedelta(hours=1), T0 + timedelta(hours=1))
    tools = {(t.app, t.tool): (t.calls, t.errors) for t in found.tools}
    assert tools == {
        ("dev.aai.echo", "echo"): (3, 0),
        ("dev.aai.notes", "add"): (4, 0),
        ("dev.aai.notes", "remove"): (1, 0),
        ("dev.aai.volume", "set"): (1, 1),
        (RUN_APP, "morning"): (1, 1),
        (RUN_APP, "plan"): (1, 0),
    }
    apps = {a.name: (a.calls, a.errors) for a in found.apps}
    assert apps["dev.aai.notes"] == (5, 0), "a failed run is no failure of the apps whose steps succeeded"
    assert apps[RUN_APP] == (2, 1)
    assert found.calls == len(STEPS) + 3 + 2 + 1

    rates = success_rates(store, T0 + timedelta(hours=1))
    notes = rates.app("dev.aai.notes")
    assert notes is not None
    assert (notes.ok, notes.calls) == (5, 5)
    volume = rates.tool("dev.aai.volume", "set")
    assert volume is not None
    assert (volume.ok, volume.calls) == (0, 1)
    morning = rates.tool(RUN_APP, "morning")
    assert morning is not None
    assert (morning.ok, morning.calls) == (0, 1)


def write(store: HistoryStore, records: list[Record]) -> None:
    for record in records:
        store.submit(record).result(10)


@pytest.mark.parametrize("reader_first", [False, True])
def test_a_schema_3_history_gets_its_sketches_and_consent_counts(tmp_path: Path, reader_first: bool) -> None:
    path = tmp_path / "history.db"
    load(V3_DUMP, path)
    store = HistoryStore(path, retention_days=36500)
    try:
        if not reader_first:
            store.start()
        since, until = datetime(2026, 11, 20, 9, tzinfo=UTC), datetime(2026, 11, 20, 12, tzinfo=UTC)
        found = store.stats(since, until)  # the whole hours 09-11 from the sketches the migration made
        echo = {(t.app, t.tool): t for t in found.tools}[("dev.aai.echo", "echo")]
        durations = [float(n + 1) for n in range(12)] + [0.5]
        assert echo.calls == 13
        expected = [sorted(durations)[max(0, math.ceil(f * 13) - 1)] for f in (0.5, 0.95, 0.99)]
        assert [echo.p50_ms, echo.p95_ms, echo.p99_ms] == pytest.approx(expected, rel=0.01)
        assert found.durations.p99_ms == pytest.approx(30.0, rel=0.01)
        assert found.consent.outcomes == {"once": 1, "tool": 1}
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
            indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
            sketched = conn.execute("SELECT count(*) FROM call_durations").fetchone()[0]
            counted = conn.execute("SELECT count(*) FROM call_tools").fetchone()[0]
        conn.close()
        assert not {"calls_durations", "calls_consent"} & indexes
        assert sketched == counted == 6  # one per hour, app and tool of the 16 calls
    finally:
        store.close()


def test_a_steps_record_is_committed_after_its_turn_and_the_run_waits_for_it(store: HistoryStore) -> None:
    recorder = Recorder(store, Redactor(), nowhere)

    async def run() -> None:
        run = recorder.begin("r", caller="c", transport="stdio", app=RUN_APP, tool="plan", args={})
        recorder.running(run, None)
        pending = recorder.begin("s0", caller="c", transport="stdio", app="x", tool="y", args={}, parent="r", step="a")
        await recorder.ok(pending, "done", 1.0, tool=None)
        assert store.get("s0") is None, "the run goes on before its step's record is committed"
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert store.get("s0") is not None, "committed in the next turn of the loop, while the run goes on"
        failed = recorder.begin("s1", caller="c", transport="stdio", app="x", tool="y", args={}, parent="r", step="b")
        await recorder.failed(failed, AutomationFailed("no"), 1.0, tool=None)
        await recorder.settle("r")
        assert store.get("s1") is not None, "every step is committed once the run has settled"
        await recorder.ok(run, {"status": "ok"}, 2.0, tool=None)

    asyncio.run(run())
    children, count = store.children("r")
    assert ([c.step for c in children], count) == (["a", "b"], 2)
    assert store.get("r") is not None


def test_a_cancelled_runs_steps_are_committed_all_the_same(store: HistoryStore) -> None:
    recorder = Recorder(store, Redactor(), nowhere)

    async def run() -> None:
        recorder.running(recorder.begin("r", caller="c", transport="stdio", app=RUN_APP, tool="plan", args={}), None)
        pending = recorder.begin("s0", caller="c", transport="stdio", app="x", tool="y", args={}, parent="r", step="a")
        await recorder.ok(pending, "done", 1.0, tool=None)
        recorder.forsake("r")
        await store.aclose()  # before the loop's next turn: the queued record is committed on the way out

    asyncio.run(run())
    assert store.get("s0") is not None


def test_the_recorder_masks_by_the_tool_it_is_given_and_looks_up_no_run() -> None:
    looked: list[tuple[str, str]] = []

    def find(app: str, tool: str) -> Any:
        looked.append((app, tool))
        raise LookupError(f"{app}:{tool}")

    written: list[Record] = []

    class Kept:
        async def write(self, record: Record, *, alone: bool = False) -> None:
            written.append(record)

    recorder = Recorder(Kept(), Redactor(), find)  # type: ignore[arg-type]
    schema = {"type": "object", "properties": {"pin": {"type": "string", "x-sensitive": True}}}
    tool = Tool(name="unlock", description="", parameters=schema)

    async def run() -> None:
        call = recorder.begin("c1", caller="c", transport="stdio", app="x", tool="unlock", args={"pin": "4711"})
        await recorder.ok(call, "ok", 1.0, tool=tool)
        run = recorder.begin("r1", caller="c", transport="stdio", app=RUN_APP, tool="plan", args={"pin": "4711"})
        await recorder.ok(run, "ok", 1.0)
        unknown = recorder.begin("c2", caller="c", transport="stdio", app="x", tool="unlock", args={})
        await recorder.failed(unknown, AutomationFailed("no"), 1.0)

    asyncio.run(run())
    assert written[0].args == {"pin": MASK}, "masked by the schema of the tool given, not looked up"
    assert looked == [("x", "unlock")], "only a call whose tool is not told is looked up; a run never"


def test_what_a_run_hides_is_cut_out_of_its_steps_and_runs_within_it(store: HistoryStore) -> None:
    recorder = Recorder(store, Redactor(), nowhere)
    schema = {"type": "object", "properties": {"inputs": {"properties": {"pin": {"x-sensitive": True}}}}}
    described = Tool(name="unlock", description="", parameters=schema)

    async def run() -> None:
        outer = recorder.begin(
            "r", caller="c", transport="stdio", app=RUN_APP, tool="unlock", args={"inputs": {"pin": "4711-x"}}
        )
        recorder.running(outer, described)
        inner = recorder.begin(
            "r2", caller="c", transport="stdio", app=RUN_APP, tool="inner", args={"code": "4711-x"}, parent="r"
        )
        recorder.running(inner, None)
        step = recorder.begin(
            "s", caller="c", transport="stdio", app="x", tool="y", args={"text": "pin 4711-x"}, parent="r2"
        )
        await recorder.ok(step, "said 4711-x", 1.0, tool=None)
        await recorder.settle("r2")
        await recorder.ok(inner, {"said": "4711-x"}, 1.0, tool=None)
        await recorder.settle("r")
        await recorder.ok(outer, {"status": "ok"}, 2.0, tool=described)

    asyncio.run(run())
    kept = [store.get(call_id) for call_id in ("r", "r2", "s")]
    assert all(k is not None for k in kept)
    assert "4711-x" not in json.dumps([[k.args, k.result] for k in kept if k is not None])
    outer_record = kept[0]
    assert outer_record is not None
    assert outer_record.args == {"inputs": {"pin": MASK}}


def test_a_cancelled_run_masks_its_arguments_by_the_schema_it_is_given(store: HistoryStore) -> None:
    recorder = Recorder(store, Redactor(), nowhere)
    schema = {"type": "object", "properties": {"inputs": {"properties": {"pin": {"x-sensitive": True}}}}}
    described = Tool(name="unlock", description="", parameters=schema)
    run = recorder.begin(
        "r", caller="c", transport="stdio", app=RUN_APP, tool="unlock", args={"inputs": {"pin": "4711-x"}}
    )
    recorder.cancelled(run, 1.0, tool=described)
    store.flush()
    kept = store.get("r")
    assert kept is not None
    assert (kept.error_type, kept.args) == ("CANCELLED", {"inputs": {"pin": MASK}})

"""Runs in `aai-gateway history`, for real: the installed command reads a history holding a run of a plan
(written as the plan engine writes it, through the Recorder) and lists the run with its steps beneath it,
shows it as a tree, names the run of a step, and exports `parent` and `step`."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.history import HistoryStore, Record
from aai_gateway.history.record import RUN_APP
from tests.history_runs import STEPS, Step, record_run
from tests.support import ROOT, gateway_command

pytestmark = pytest.mark.e2e
V2_DUMP = ROOT / "tests" / "unit" / "history_v2.sql"
"""A history as aai-gateway wrote it with schema 2, before runs."""


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done


def plain(call_id: str, at: datetime) -> Record:
    return Record(
        call_id=call_id,
        time=at,
        caller="cli",
        transport="cli",
        app="dev.aai.echo",
        tool="echo",
        args={},
        status="ok",
        duration_ms=1.0,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A history: a call, a run that failed at `lower` and undid a step, two steps of a run not recorded
    (under way), and a later call."""
    home = tmp_path / "home"
    store = HistoryStore(home / ".aai" / "history.db")
    at = datetime.now(UTC) - timedelta(hours=1)
    try:
        store.submit(plain("first", at - timedelta(minutes=1))).result(10)
        record_run(store, "run-1", at)
        record_run(store, "run-2", at + timedelta(minutes=5), steps=STEPS[:2], with_run=False)
        store.submit(plain("last", at + timedelta(minutes=10))).result(10)
    finally:
        store.close()
    return home


def test_history_lists_a_run_once_with_its_steps_indented_beneath(home: Path) -> None:
    lines = cli(home, "history").stdout.splitlines()
    assert lines[0].split() == ["TIME", "(UTC)", "ID", "CALLER", "VIA", "APP:TOOL", "STATUS", "MS"]
    ids = [line.split()[2] for line in lines[1:] if line[:1].isdigit()]
    assert ids == ["last", "run-2-1", "run-2-0", "run-1", "first"], "each step is listed under its run only"
    run = next(n for n, line in enumerate(lines) if " run-1 " in line)
    assert f"{RUN_APP}:morning" in lines[run]
    assert "-32001 AUTOMATION_FAILED" in lines[run]
    beneath = lines[run + 1 : run + 1 + len(STEPS)]
    for line, step in zip(beneath, STEPS, strict=True):
        assert line.startswith(f"  {step.label} "), line
        assert f"{step.app}:{step.tool}" in line
        assert ("AUTOMATION_FAILED" if step.error else " ok ") in line
        assert line.rstrip().endswith(f"{step.ms:.1f}")
    assert lines[run + 1 + len(STEPS)].startswith("20"), "the next entry is not indented"
    orphan = next(n for n, line in enumerate(lines) if " run-2-0 " in line)
    assert lines[orphan + 1] == "  step read of run run-2 (not recorded: under way, or the gateway ended during it)"


def test_a_filter_that_matches_a_step_shows_its_run(home: Path) -> None:
    lines = cli(home, "history", "--app", "dev.aai.volume").stdout.splitlines()
    assert " run-1 " in lines[1]
    assert [line.split()[0] for line in lines[2:]] == [s.label.split()[0] for s in STEPS]
    failed = cli(home, "history", "--status", "error").stdout.splitlines()
    assert " run-1 " in failed[1]
    assert len(failed) == 2 + len(STEPS)


def test_history_json_gives_a_run_its_steps(home: Path) -> None:
    entries: list[dict[str, Any]] = json.loads(cli(home, "history", "--json").stdout)
    assert [e["id"] for e in entries] == ["last", "run-2-1", "run-2-0", "run-1", "first"]
    run = entries[3]
    assert run["childCount"] == len(STEPS)
    assert [(c["step"], c["parent"], c["app"], c["tool"]) for c in run["children"]] == [
        (s.label, "run-1", s.app, s.tool) for s in STEPS
    ]
    assert (entries[1]["parent"], entries[1]["step"]) == ("run-2", "notify[0]")
    assert "children" not in entries[0]
    assert (entries[0]["parent"], entries[0]["step"]) == (None, None)


def test_history_show_prints_a_run_as_a_tree_and_a_step_with_its_run(home: Path) -> None:
    shown = cli(home, "history", "show", "run-1").stdout.splitlines()
    at = shown.index(f"steps     {len(STEPS)}, in the order they started")
    tree = shown[at + 1 : at + 1 + len(STEPS)]
    for n, (line, step) in enumerate(zip(tree, STEPS, strict=True)):
        branch = "`-" if n == len(STEPS) - 1 else "|-"
        assert line.startswith(f"  {branch} {step.label} "), line
        assert f"{step.app}:{step.tool}" in line
        assert f"run-1-{n}" in line
        assert line.endswith(f"{step.ms:.1f} ms")
        assert ("-32001 AUTOMATION_FAILED" if step.error else " ok ") in line
    assert shown[at + 1 + len(STEPS)] == "arguments"
    of_step = cli(home, "history", "show", "run-1-3").stdout.splitlines()
    assert of_step[0] == "call      run-1-3"
    assert of_step[1].startswith(f"run       run-1 ({RUN_APP}:morning, ")
    assert of_step[1].endswith("), step lower")
    lone = cli(home, "history", "show", "run-2-0").stdout.splitlines()
    assert lone[1] == "run       run-2 (not recorded: under way, or the gateway ended during it), step read"
    plain_call = cli(home, "history", "show", "first").stdout
    assert "run " not in plain_call
    assert "steps" not in plain_call
    whole = json.loads(cli(home, "history", "show", "run-1", "--json").stdout)
    assert [c["id"] for c in whole["children"]] == [f"run-1-{n}" for n in range(len(STEPS))]
    assert whole["childCount"] == len(STEPS)


def test_export_carries_parent_and_step(home: Path) -> None:
    exported = [json.loads(line) for line in cli(home, "history", "export").stdout.splitlines()]
    by_id = {e["id"]: e for e in exported}
    assert len(exported) == 2 + len(STEPS) + 1 + 2
    assert (by_id["run-1-4"]["parent"], by_id["run-1-4"]["step"]) == ("run-1", "notify[1] (undo)")
    assert (by_id["run-1"]["parent"], by_id["run-1"]["step"]) == (None, None)
    rows = list(csv.DictReader(io.StringIO(cli(home, "history", "export", "--format", "csv").stdout)))
    assert {"parent", "step"} <= set(rows[0])
    found = {r["id"]: (r["parent"], r["step"]) for r in rows}
    assert found["run-1-3"] == ("run-1", "lower")
    assert found["first"] == ("", "")


@pytest.mark.hostile("history")
def test_step_labels_cannot_drive_the_terminal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = HistoryStore(home / ".aai" / "history.db")
    try:
        record_run(store, "run-x", datetime.now(UTC), steps=(Step("\x1b[2J\x1b]0;owned\x07 read\r", "a.b", "c", 1.0),))
    finally:
        store.close()
    for args in (("history",), ("history", "show", "run-x"), ("history", "show", "run-x-0")):
        out = cli(home, *args).stdout
        assert "\x1b" not in out
        assert "\x07" not in out
        assert "\r" not in out
        assert "\\x1b[2J" in out


def test_history_reads_a_file_an_older_gateway_wrote(tmp_path: Path) -> None:
    """`aai-gateway history` right after an upgrade, before any gateway of this version opened the file."""
    path = tmp_path / "home" / ".aai" / "history.db"
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as conn:
        conn.executescript(V2_DUMP.read_text())
    conn.close()
    lines = cli(tmp_path / "home", "history").stdout.splitlines()
    assert [line.split()[2] for line in lines[1:]] == ["v2-asked", "v2-failed", "v2-ok"]
    shown = cli(tmp_path / "home", "history", "show", "v2-failed").stdout
    assert "error -32001 AUTOMATION_FAILED" in shown

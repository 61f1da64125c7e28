"""`aai-gateway stats` on a history an older gateway wrote (schema 3): the installed command brings it up to
schema 4 as it reads it, making the hourly duration sketches of the calls already kept, and shows the p50,
p95 and p99 of each tool and of every call within 1 % of the exact ones, and the consent questions, from
the hourly tables that replace the two indexes schema 3 kept on every call."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from aai_gateway.history.schema import SCHEMA_VERSION
from aai_gateway.history.sketch import exact
from tests.support import ROOT, gateway_command

pytestmark = pytest.mark.e2e
V3_DUMP = ROOT / "tests" / "unit" / "history_v3.sql"


def stats(home: Path, *args: str) -> str:
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    command = [gateway_command(), "stats", "--since", "2026-11-20T09:00Z", "--until", "2026-11-20T12:00Z", *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_stats_reads_an_older_history_with_sketches_made_for_it(tmp_path: Path) -> None:
    path = tmp_path / "home" / ".aai" / "history.db"
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as conn:
        conn.executescript(V3_DUMP.read_text())
        durations = [row[0] for row in conn.execute("SELECT duration_ms FROM calls")]
        echo = [row[0] for row in conn.execute("SELECT duration_ms FROM calls WHERE tool = 'echo'")]
    conn.close()
    found = json.loads(stats(tmp_path / "home", "--json"))
    assert (found["calls"], found["errors"]) == (16, 1)
    tools = {(t["app"], t["tool"]): t for t in found["tools"]}
    for key, values in ((("dev.aai.echo", "echo"), echo), (None, durations)):
        figures = found["durations"] if key is None else tools[key]
        for name, fraction in (("p50Ms", 0.5), ("p95Ms", 0.95), ("p99Ms", 0.99)):
            assert figures[name] == pytest.approx(exact(values, fraction)[0], rel=0.01), (key, name)
    assert found["consent"] == {"asked": 2, "answered": 2, "outcomes": {"once": 1, "tool": 1}}
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("SELECT count(*) FROM call_durations").fetchone() == (6,)
    conn.close()
    text = stats(tmp_path / "home")
    assert "P99 MS" in text
    assert "Duration of every call: p50 " in text

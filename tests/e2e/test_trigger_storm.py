"""A storm of 10,000 DBus signals against a workflow they trigger, in the installed `aai-gateway serve`: the
workflow runs no more than its maxPerMinute in any minute, its runs' records count every fire held back,
the gateway answers `aai_exec` during and after, and its memory stays bounded. The signals come from the
test's own dev.aai.Storm (see test_events.py)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from dbus_fast.aio import MessageBus

from tests.e2e.mcp_client import http_session
from tests.e2e.test_events import APP, echo, emitter, gateway_rss, home_with_storm, tick
from tests.e2e.test_serve import gateway, serving
from tests.support import Bus, wait_until

__all__ = ["emitter"]
pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SIGNALS = 10_000
PER_MINUTE = 3
WORKFLOW = {
    "name": "On each tick",
    "on": [{"app": APP, "event": "tick", "maxPerMinute": PER_MINUTE}],
    "steps": [{"id": "say", "app": "dev.aai.echo", "tool": "echo", "args": {"text": "tick ${event.payload.n}"}}],
}


@pytest.mark.hostile("limits")
@pytest.mark.timeout(300)
async def test_a_storm_of_signals_runs_the_workflow_at_its_rate_and_counts_the_rest(
    bus: Bus, echo_app: None, emitter: MessageBus, tmp_path: Path
) -> None:
    env = home_with_storm(bus, tmp_path)
    folder = Path(env["HOME"]) / ".aai" / "workflows"
    folder.mkdir()
    (folder / "storm.json").write_text(json.dumps(WORKFLOW))
    approved = gateway(env, "workflow", "approve", "storm", "--yes")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    log = tmp_path / "serve.log"

    def runs() -> list[dict[str, Any]]:
        listed = json.loads(gateway(env, "history", "--app", "aai.workflows", "--limit", "1000", "--json").stdout)
        return [e for e in listed if e["tool"] == "storm"]

    with serving(env, log) as (_, url):
        wait_until(lambda: "listening for tick on the session bus" in log.read_text(), 30, "the trigger's match rule")
        async with http_session(url) as session:
            assert await echo(session, "before") == "before"
            began = time.monotonic()
            await tick(emitter, 0, "x" * 5_000)  # more than a run's record keeps of a payload
            wait_until(lambda: bool(runs()), 30, "the first triggered run")
            before = gateway_rss(env["HOME"])
            for n in range(1, SIGNALS):
                await tick(emitter, n, "x" * 200)
                if n == SIGNALS // 2:
                    assert await echo(session, "during") == "during"
            assert await echo(session, "after") == "after"
            grown = gateway_rss(env["HOME"]) - before
            print(f"{SIGNALS:,} signals against a trigger: the gateway grew {grown} kB")
            assert grown < 64 * 1024, f"the gateway grew by {grown} kB during the storm"
            stormed = runs()
            assert 1 <= len(stormed) <= PER_MINUTE, stormed
            # The next minute lets one more run start, and its record counts what was held back meanwhile.
            await anyio.sleep(max(0.0, began + 61 - time.monotonic()))
            await tick(emitter, SIGNALS, "last")
            wait_until(lambda: len(runs()) > len(stormed), 30, "the run after the storm")
            assert await echo(session, "still") == "still"
    done = sorted(runs(), key=lambda r: r["time"])
    assert all(r["status"] == "ok" for r in done), done
    held = [r["args"]["event"]["heldBack"] for r in done]
    print(f"runs: {len(done)}, held back per run: {held}")
    assert sum(held) + len(done) == SIGNALS + 1  # every fire either ran or is counted
    times = [datetime.fromisoformat(r["time"]) for r in done]
    assert all(later - first >= timedelta(seconds=59) for first, later in zip(times, times[PER_MINUTE:], strict=False))
    first = done[0]["args"]["event"]
    assert first["trigger"] == f"{APP}:tick"
    assert first["payload"]["note"].endswith("bytes, not kept"), first
    assert done[-1]["args"]["event"]["payload"] == {"n": SIGNALS, "text": "last"}
    assert log.read_text().count("fired and was held back") <= len(done) * 2  # not a line a fire

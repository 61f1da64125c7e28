"""Timer triggers on a virtual clock, in process against the real DBus echo app: approved workflows run
on time, at most so often (what is held back counted in the next run's record), and an edit withdraws
the approval. Nothing sleeps: the loop's clock jumps to its next timer."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from aai_gateway.history.record import Record
from aai_gateway.service import Caller, Gateway
from aai_gateway.workflows.triggers import Triggers, tools_of
from tests.virtual_clock import PatientVirtualClockLoop

pytestmark = pytest.mark.anyio

START = datetime(2026, 11, 30, 7, 58, tzinfo=ZoneInfo("Europe/Berlin"))  # a Monday


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return ("asyncio", {"loop_factory": PatientVirtualClockLoop})


def write(gateway: Gateway, workflow_id: str, on: list[dict[str, Any]], text: str = "tick ${event.at}") -> None:
    folder = gateway.settings.workflows_dir
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "name": workflow_id,
        "on": on,
        "steps": [{"id": "say", "app": "dev.aai.echo", "tool": "echo", "args": {"text": text}}],
    }
    (folder / f"{workflow_id}.json").write_text(json.dumps(doc))
    gateway.rescan()


def approve(gateway: Gateway, workflow_id: str) -> None:
    saved = gateway.shelf.get(workflow_id)
    assert saved is not None, gateway.shelf.broken
    gateway.approvals.approve(saved, tools_of(saved, gateway.static_tool), source="test")


def runs(gateway: Gateway, workflow_id: str) -> list[Record]:
    return [r for r in gateway.history.query() if r.app == "aai.workflows" and r.tool == workflow_id]


@pytest.fixture
async def triggers(echo_gateway: Gateway) -> Triggers:
    loop = asyncio.get_running_loop()
    began = loop.time()
    found = echo_gateway.triggers()
    found.now = lambda: START + timedelta(seconds=loop.time() - began)
    return found


async def test_a_timer_runs_an_approved_workflow_on_time_and_an_edit_stops_it(
    echo_gateway: Gateway, triggers: Triggers
) -> None:
    write(echo_gateway, "tick", [{"every": "1m"}])
    write(echo_gateway, "morning", [{"at": "weekdays 08:00"}], text="good morning")
    write(echo_gateway, "unapproved", [{"every": "30s"}])
    approve(echo_gateway, "tick")
    approve(echo_gateway, "morning")
    running = asyncio.ensure_future(triggers.run())
    await asyncio.sleep(185)
    ticks = runs(echo_gateway, "tick")
    assert len(ticks) == 3
    assert all(r.status == "ok" for r in ticks)
    said = sorted(r.result or "" for r in echo_gateway.history.query() if r.tool == "echo" and r.parent)
    assert '"good morning"' in said
    assert any("tick 2026-11-30T08:00:00+01:00" in s for s in said), said
    assert len(runs(echo_gateway, "morning")) == 1
    assert runs(echo_gateway, "unapproved") == []

    write(echo_gateway, "tick", [{"every": "1m"}], text="changed ${event.at}")  # the approval no longer holds
    await asyncio.sleep(180)
    assert len(runs(echo_gateway, "tick")) == 3
    approve(echo_gateway, "tick")
    await asyncio.sleep(65)
    assert len(runs(echo_gateway, "tick")) == 4
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


async def test_a_trigger_runs_at_most_so_often_and_counts_what_it_held_back(
    echo_gateway: Gateway, triggers: Triggers
) -> None:
    write(echo_gateway, "often", [{"every": "10s", "maxPerMinute": 2}])
    approve(echo_gateway, "often")
    running = asyncio.ensure_future(triggers.run())
    await asyncio.sleep(75)
    done = runs(echo_gateway, "often")
    assert len(done) == 3  # at 10 s and 20 s, then held back until 70 s
    latest = max(done, key=lambda r: r.time)
    assert latest.args["event"]["heldBack"] == 4
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


@pytest.mark.hostile("limits")
async def test_a_workflow_that_keeps_failing_runs_no_more_often_and_the_gateway_serves_on(
    echo_gateway: Gateway, triggers: Triggers
) -> None:
    folder = echo_gateway.settings.workflows_dir
    folder.mkdir(parents=True, exist_ok=True)
    failing = {
        "name": "always fails",
        "on": [{"every": "10s", "maxPerMinute": 3}],
        "steps": [{"id": "boom", "app": "dev.aai.echo", "tool": "fail", "args": {"message": "no"}}],
    }
    (folder / "failing.json").write_text(json.dumps(failing))
    echo_gateway.rescan()
    approve(echo_gateway, "failing")
    running = asyncio.ensure_future(triggers.run())
    await asyncio.sleep(300)
    done = runs(echo_gateway, "failing")
    assert 13 <= len(done) <= 15  # 3 a minute over 5 minutes, however often it fires
    assert all(r.status == "error" for r in done)
    assert await echo_gateway.call("dev.aai.echo", "echo", {"text": "still here"}, Caller("cli", "cli")) == "still here"
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


async def test_a_start_trigger_runs_once_when_the_triggers_start(echo_gateway: Gateway, triggers: Triggers) -> None:
    write(echo_gateway, "hello", [{"start": True}], text="started ${event.at}")
    approve(echo_gateway, "hello")
    running = asyncio.ensure_future(triggers.run())
    await asyncio.sleep(60)
    assert len(runs(echo_gateway, "hello")) == 1
    write(echo_gateway, "later", [{"start": True}], text="later")
    approve(echo_gateway, "later")
    await asyncio.sleep(60)
    assert runs(echo_gateway, "later") == []  # approved after the start: it runs at the next one
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)

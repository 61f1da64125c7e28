"""An app's event starts an approved workflow: dunst closes a notification (dunstctl, as the user would) and
the workflow, triggered by notification_closed with a filter, notifies which one was closed."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from aai_gateway.config import load_settings
from aai_gateway.service import Caller, Gateway
from aai_gateway.workflows.triggers import tools_of
from tests.library.library_gateway import gateway_env
from tests.support import until
from tests.workflows.conftest import Desktop

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "org.freedesktop.notifications"
WORKFLOW = {
    "name": "Say which notification closed",
    "on": [{"app": APP, "event": "notification_closed", "filter": "reason == `2`", "debounce": 0.2}],
    "steps": [
        {
            "id": "tell",
            "app": APP,
            "tool": "notify",
            "args": {"app_name": "triggers", "summary": "Closed ${event.payload.id} (${event.trigger})"},
        }
    ],
}


def summaries(desktop: Desktop) -> list[str]:
    shown = subprocess.run(
        ["dunstctl", "history"], env=desktop.env, capture_output=True, text=True, timeout=10, check=True
    )
    return [entry["summary"]["data"] for entry in json.loads(shown.stdout)["data"][0]]


async def test_a_closed_notification_starts_the_approved_workflow(
    desktop: Desktop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = gateway_env(desktop.bus, tmp_path / "home", APP)
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", desktop.bus.address)
    gateway = Gateway(load_settings(env))
    folder = gateway.settings.workflows_dir
    folder.mkdir(parents=True)
    (folder / "closed.json").write_text(json.dumps(WORKFLOW))
    gateway.rescan()
    saved = gateway.shelf.get("closed")
    assert saved is not None, gateway.shelf.broken
    gateway.approvals.approve(saved, tools_of(saved, gateway.static_tool), source="test")
    triggers = gateway.triggers()
    running = asyncio.ensure_future(triggers.run())
    try:
        cli = Caller(name="cli", transport="cli")
        shown = await gateway.call(APP, "notify", {"app_name": "tests", "summary": "Close me"}, cli)
        await asyncio.sleep(0.5)  # the trigger's match rule is in place well before the user closes it
        subprocess.run(["dunstctl", "close"], env=desktop.env, timeout=10, check=True)
        closed = f"Closed {shown} ({APP}:notification_closed where reason == `2`)"
        await until(lambda: closed in summaries(desktop), 15, "the triggered workflow to notify")
        runs = [r for r in gateway.history.query() if r.app == "aai.workflows"]
        assert [(r.tool, r.status, r.caller) for r in runs] == [("closed", "ok", "trigger")]
        assert runs[0].args["event"]["payload"] == {"id": shown, "reason": 2}
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await gateway.aclose()

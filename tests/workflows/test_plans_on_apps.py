"""aai_run through the official SDK client, over stdio and HTTP, on mpv and dunst: a result passed from one
app to the next, a failure that puts both apps back (checked on the apps themselves), a saved workflow run
by aai_exec, and a declined plan that runs nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, types

from tests.e2e.mcp_client import Consenter, http_session, stdio_session, web_gateway
from tests.library.library_gateway import gateway_env
from tests.support import gateway_command, wait_until
from tests.workflows.conftest import Desktop

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APPS = ("org.mpris.mediaplayer2", "org.freedesktop.notifications", "org.dunstproject.dunst")
EXAMPLES = Path(__file__).parents[2] / "src" / "aai_gateway" / "workflows" / "examples"
Session = Callable[..., AbstractAsyncContextManager[ClientSession]]


def dunst(desktop: Desktop, *argv: str) -> str:
    done = subprocess.run(["dunstctl", *argv], env=desktop.env, capture_output=True, text=True, timeout=10, check=True)
    return done.stdout.strip()


def summaries(desktop: Desktop) -> list[str]:
    history = json.loads(dunst(desktop, "history"))
    return [entry["summary"]["data"] for entry in history["data"][0]]


@pytest.fixture(params=["stdio", "http"])
def session(request: pytest.FixtureRequest, desktop: Desktop, tmp_path: Path) -> Session:
    env = gateway_env(desktop.bus, tmp_path / "home", *APPS)

    @asynccontextmanager
    async def opened(consent: Any = None) -> AsyncIterator[ClientSession]:
        answer = consent or Consenter("app")
        if request.param == "stdio":
            async with stdio_session(env, tmp_path / "stderr.log", consent=answer) as client:
                yield client
            return
        with web_gateway(env, tmp_path / "web.log") as url:
            async with http_session(url, consent=answer) as client:
                yield client

    opened.home = tmp_path / "home"  # type: ignore[attr-defined]
    return opened


async def run(client: ClientSession, plan: dict[str, Any]) -> tuple[types.CallToolResult, dict[str, Any]]:
    result = await client.call_tool("aai_run", plan)
    assert result.structured_content is not None, result
    return result, result.structured_content


NOW_PLAYING: dict[str, Any] = {
    "steps": [
        {"id": "track", "app": "org.mpris.mediaplayer2", "tool": "metadata", "args": {"player": "mpv"}},
        {
            "id": "tell",
            "app": "org.freedesktop.notifications",
            "tool": "notify",
            "args": {"app_name": "plans", "summary": 'Now playing: ${steps.track.result."xesam:title"}'},
        },
    ],
    "output": '${steps.track.result."xesam:title"}',
}


async def test_the_second_step_reads_what_the_first_found(desktop: Desktop, session: Session) -> None:
    async with session() as client:
        result, report = await run(client, NOW_PLAYING)
    assert not result.is_error, report
    assert report["status"] == "ok"
    assert report["output"] == "Evening Song.wav"
    assert [s["status"] for s in report["steps"]] == ["ok", "ok"]
    wait_until(lambda: "Now playing: Evening Song.wav" in summaries(desktop), 10, "dunst to show the notification")
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert 'Output: "Evening Song.wav"' in text.text


async def test_a_failing_step_puts_both_apps_back(desktop: Desktop, session: Session) -> None:
    desktop.mpv.command("set_property", "volume", 70)
    dunst(desktop, "set-paused", "false")
    plan = {
        "steps": [
            {
                "id": "lower",
                "app": "org.mpris.mediaplayer2",
                "tool": "set_volume",
                "args": {"player": "mpv", "level": 0.2},
            },
            {"id": "quiet", "app": "org.dunstproject.dunst", "tool": "set_do_not_disturb", "args": {"on": True}},
            {
                "id": "broken",
                "app": "org.mpris.mediaplayer2",
                "tool": "volume",
                "args": {"player": "no-such-player"},
                "if": "${steps.lower.status == 'ok' && steps.quiet.status == 'ok'}",
            },
        ]
    }
    async with session() as client:
        result, report = await run(client, plan)
    assert result.is_error
    assert report["status"] == "rolledBack"
    steps = {s["id"]: s for s in report["steps"]}
    assert (steps["lower"]["status"], steps["quiet"]["status"], steps["broken"]["status"]) == (
        "undone",
        "undone",
        "failed",
    )
    assert steps["lower"]["undo"] == {"status": "ok", "tool": "set_volume"}
    assert desktop.mpv.property("volume") == 70
    assert dunst(desktop, "is-paused") == "false"
    home = session.home  # type: ignore[attr-defined]
    listed = subprocess.run(
        [gateway_command(), "history", "--json", "--limit", "1"],
        env={"HOME": str(home), "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    (run_record,) = json.loads(listed.stdout)
    assert (run_record["app"], run_record["tool"], run_record["status"]) == ("aai.workflows", "plan", "error")
    children = [(c["step"], c["tool"], c["status"]) for c in run_record["children"]]
    assert ("lower", "set_volume", "ok") in children
    assert ("lower (before)", "volume", "ok") in children
    assert ("broken", "volume", "error") in children
    assert ("lower (undo)", "set_volume", "ok") in children
    assert ("quiet (undo)", "set_do_not_disturb", "ok") in children


async def test_a_saved_workflow_runs_by_aai_exec(desktop: Desktop, session: Session) -> None:
    folder = session.home / ".aai" / "workflows"  # type: ignore[attr-defined]
    folder.mkdir(parents=True)
    shutil.copy(EXAMPLES / "now-playing.json", folder)
    async with session() as client:
        guide = await client.call_tool("app_aai_workflows", {})
        assert "now-playing" in guide.content[0].text  # type: ignore[union-attr]
        result = await client.call_tool(
            "aai_exec", {"app": "aai.workflows", "tool": "now-playing", "args": {"player": "mpv"}}
        )
        assert not result.is_error, result
        report = json.loads(result.content[0].text)  # type: ignore[union-attr]
        assert report["output"]["title"] == "Evening Song.wav"
        found = await client.call_tool("aai_search", {"query": "what song is playing"})
        hits = (found.structured_content or {})["results"]
        assert ("aai.workflows", "now-playing") in [(h["app"]["id"], h["tool"]) for h in hits[:3]]


async def test_a_declined_plan_runs_nothing(desktop: Desktop, session: Session) -> None:
    desktop.mpv.command("set_property", "volume", 70)
    tell = {**NOW_PLAYING["steps"][1], "args": {"summary": "Declined plan ${steps.track.result}"}}
    refusing = Consenter("deny")
    async with session(refusing) as client:
        result = await client.call_tool(
            "aai_run",
            {
                "steps": [
                    NOW_PLAYING["steps"][0],
                    tell,
                    {
                        "id": "louder",
                        "app": "org.mpris.mediaplayer2",
                        "tool": "set_volume",
                        "args": {"player": "mpv", "level": 1.0},
                    },
                ],
            },
        )
    assert result.is_error
    assert "nothing was called" in result.content[0].text  # type: ignore[union-attr]
    assert len(refusing.questions) == 1
    question = refusing.messages[0]
    assert "set_volume" in question
    assert "notify" in question
    assert desktop.mpv.property("volume") == 70
    assert not [s for s in summaries(desktop) if s.startswith("Declined plan")]

"""Saved workflows as one app, read again while the gateway runs: a file added, edited, broken and removed
shows in the listing and the guide, with `list_changed` sent, and a broken one never takes the others down."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.e2e.mcp_client import Inbox, stdio_session, text_of
from tests.support import Bus, echo_home

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

LIST_CHANGED = "notifications/tools/list_changed"


def workflow(text: str) -> dict[str, Any]:
    return {
        "name": "Say it twice|Zweimal sagen",
        "inputs": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "steps": [
            {"id": "once", "app": "dev.aai.echo", "tool": "echo", "args": {"text": "${inputs.text}"}},
            {"id": "twice", "app": "dev.aai.echo", "tool": "echo", "args": {"text": text}},
        ],
        "output": "${steps.twice.result}",
    }


async def listed(client: ClientSession) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def test_workflow_files_come_and_go_while_the_gateway_runs(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    home = tmp_path / "home"
    echo_home(home, "mcp")
    folder = home / ".aai" / "workflows"
    env = {"HOME": str(home), "DBUS_SESSION_BUS_ADDRESS": bus.address, "AAI_PLATFORM": "linux"}
    inbox = Inbox()
    async with stdio_session(env, tmp_path / "stderr.log", inbox=inbox) as client:
        assert "app_aai_workflows" not in await listed(client)
        folder.mkdir()
        (folder / "twice.json").write_text(json.dumps(workflow("${steps.once.result} ${steps.once.result}")))
        await inbox.wait_for(LIST_CHANGED)
        assert "app_aai_workflows" in await listed(client)
        guide = text_of(await client.call_tool("app_aai_workflows", {}))
        assert "twice" in guide
        assert "Say it twice" in guide
        ran = await client.call_tool("aai_exec", {"app": "aai.workflows", "tool": "twice", "args": {"text": "hi"}})
        assert json.loads(text_of(ran))["output"] == "hi hi"

        inbox.methods.clear()
        (folder / "twice.json").write_text(json.dumps(workflow("${steps.once.result}!")))
        await inbox.wait_for(LIST_CHANGED)
        ran = await client.call_tool("aai_exec", {"app": "aai.workflows", "tool": "twice", "args": {"text": "hi"}})
        assert json.loads(text_of(ran))["output"] == "hi!"

        inbox.methods.clear()
        (folder / "broken.json").write_text('{"name": "no steps"}')
        (folder / "other.json").write_text(json.dumps(workflow("${steps.once.result}?")))
        await inbox.wait_for(LIST_CHANGED)
        guide = text_of(await client.call_tool("app_aai_workflows", {}))
        assert "other" in guide
        assert "broken" not in guide
        missing = await client.call_tool("aai_exec", {"app": "aai.workflows", "tool": "broken", "args": {}})
        assert missing.is_error

        inbox.methods.clear()
        for path in folder.iterdir():
            path.unlink()
        await inbox.wait_for(LIST_CHANGED)
        assert "app_aai_workflows" not in await listed(client)
    assert "broken.json" in (tmp_path / "stderr.log").read_text()

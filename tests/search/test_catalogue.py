"""`catalogue`: what `tools/list` holds, and a client that passes only its first 40 tools to the model."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.library.entries import apps_root
from tests.e2e.mcp_client import Consenter, Inbox, stdio_session, text_of
from tests.mcpservers.servers import descriptor, hostile
from tests.support import TEST_APPS, Bus, install_descriptor

pytestmark = pytest.mark.anyio

FIXED = ["aai_search", "aai_install", "aai_exec", "aai_batch", "aai_run", "aai_wait", "web_discover"]


def crowded_home(tmp_path: Path, servers: int = 4, leave_out: str = "", **config: Any) -> Path:
    """The echo app, every library entry but `leave_out` and `servers` MCP servers installed."""
    home = tmp_path / "home"
    aai = home / ".aai"
    install_descriptor(aai, TEST_APPS / "dev.aai.echo" / "aai.json")
    for entry in apps_root().iterdir():
        if entry.name == leave_out:
            continue
        (aai / entry.name).mkdir(parents=True)
        shutil.copyfile(str(entry / "aai.json"), aai / entry.name / "aai.json")
    for number in range(servers):
        app_id = f"mcp.helper{number}"
        doc = descriptor(app_id, hostile(tmp_path / f"plan{number}.json", {}))
        (aai / app_id).mkdir()
        (aai / app_id / "aai.json").write_text(json.dumps(doc))
    (aai / "config.json").write_text(json.dumps({"consent": {"default": "allow"}, **config}))
    return home


def env_of(home: Path, bus: Bus) -> dict[str, str]:
    return bus.env() | {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"}


async def test_a_client_that_sees_40_tools_still_finds_and_runs_an_operation(
    tmp_path: Path, bus: Bus, echo_app: None
) -> None:
    home = crowded_home(tmp_path, catalogue="apps", leave_out="org.freedesktop.dbus")
    user = Consenter("app")
    async with stdio_session(env_of(home, bus), tmp_path / "gateway.log", consent=user) as session:
        listed = [t.name for t in (await session.list_tools()).tools]
        assert len(listed) >= 38 + len(FIXED)  # the echo app, 33 library entries, 4 MCP servers
        seen = listed[:40]  # what Cursor passes to its model
        assert seen[: len(FIXED)] == FIXED
        found = (await session.call_tool("aai_search", {"query": "negate a boolean"})).structured_content
        assert found is not None
        hit = found["results"][0]
        assert (hit["app"]["id"], hit["tool"]) == ("dev.aai.echo", "negate")
        assert set(hit["parameters"]["properties"]) == {"flag"}
        ran = await session.call_tool(
            "aai_exec", {"app": hit["app"]["id"], "tool": hit["tool"], "args": {"flag": True}}
        )
        assert text_of(ran) == "false"


@pytest.mark.parametrize(("catalogue", "apps_listed"), [("auto", False), ("search", False), ("apps", True)])
async def test_each_catalogue_mode(tmp_path: Path, bus: Bus, catalogue: str, apps_listed: bool) -> None:
    home = crowded_home(tmp_path, servers=0, catalogue=catalogue)
    async with stdio_session(env_of(home, bus), tmp_path / "gateway.log") as session:
        listed = [t.name for t in (await session.list_tools()).tools]
        assert listed[: len(FIXED)] == FIXED
        assert (len(listed) > len(FIXED)) == apps_listed
        guide = await session.call_tool("app_dev_aai_echo", {})  # a guide is callable whether listed or not
        assert "# Echo Operation Guide" in text_of(guide)


async def test_auto_lists_a_few_apps_and_switches_when_they_grow(tmp_path: Path, bus: Bus) -> None:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}}))
    inbox = Inbox()
    async with stdio_session(env_of(home, bus), tmp_path / "gateway.log", inbox=inbox) as session:
        assert [t.name for t in (await session.list_tools()).tools] == [*FIXED, "app_dev_aai_echo"]
        for entry in apps_root().iterdir():
            (home / ".aai" / entry.name).mkdir()
            shutil.copyfile(str(entry / "aai.json"), home / ".aai" / entry.name / "aai.json")
        await inbox.wait_for("notifications/tools/list_changed", timeout=30)
        for _ in range(100):  # the rescan may land in several steps while the files are copied
            listed = [t.name for t in (await session.list_tools()).tools]
            if listed == FIXED:
                break
            await inbox.wait_for("notifications/tools/list_changed", timeout=30)
            inbox.methods.clear()
        assert listed == FIXED

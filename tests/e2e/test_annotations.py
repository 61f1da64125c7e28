"""Tool annotations through the installed gateway over stdio: listed, shown in the guide, used by consent.

The echo app's descriptor marks `echo` and `add` read-only, `set_volume` idempotent and `exit` destructive.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.e2e.mcp_client import Consenter, error_of, stdio_session, text_of
from tests.support import TEST_APPS, Bus, install_descriptor

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def home_with(tmp_path: Path, **config: Any) -> Path:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    (home / ".aai" / "config.json").write_text(json.dumps({"errorStyle": "jsonrpc", **config}), "utf-8")
    return home


def env_of(bus: Bus, home: Path) -> dict[str, str]:
    return bus.env(HOME=str(home), AAI_PLATFORM="linux")


async def run(session: ClientSession, tool: str, args: dict[str, Any]) -> str:
    return text_of(await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": tool, "args": args}))


async def refused(session: ClientSession, tool: str, args: dict[str, Any]) -> tuple[int, str]:
    error = await error_of(session, "aai_exec", {"app": "dev.aai.echo", "tool": tool, "args": args})
    assert error.data is not None
    return error.code, str(error.data["detail"])


async def test_the_listing_and_the_guide_carry_the_annotations(bus: Bus, tmp_path: Path) -> None:
    async with stdio_session(env_of(bus, home_with(tmp_path)), tmp_path / "stderr.log") as session:
        listed = {t.name.replace(":", "_").replace(".", "_"): t for t in (await session.list_tools()).tools}
        guide_hints = listed["app_dev_aai_echo"].annotations
        assert guide_hints is not None
        assert guide_hints.read_only_hint is True
        discover = listed["web_discover"].annotations
        assert discover is not None
        assert (discover.title, discover.read_only_hint, discover.open_world_hint) == ("Discover a web app", True, True)
        for name in ("aai_exec", "aai_batch"):
            hints = listed[name].annotations
            assert hints is not None
            assert hints.title
            assert (hints.read_only_hint, hints.destructive_hint, hints.open_world_hint) == (None, True, True)

        guide = text_of(await session.call_tool("app_dev_aai_echo", {}))
        assert "### echo\n\nReturn the text unchanged\n\n**Hints**: read-only\n\n**Parameters**" in guide
        assert "### set_volume\n\nWrite the Volume property (0..1)\n\n**Hints**: idempotent\n\n" in guide
        assert "### exit\n\nReply, then quit the service\n\n**Hints**: destructive\n\n" in guide
        assert "### missing\n\nA method the service does not have\n\n**Parameters**" in guide  # no marks, no line


@pytest.mark.parametrize("read_only", ["allow", "ask"])
async def test_consent_read_only_allow_runs_read_only_tools_unasked(
    bus: Bus, echo_app: None, tmp_path: Path, read_only: str
) -> None:
    home = home_with(tmp_path, consent={"readOnly": read_only})
    async with stdio_session(env_of(bus, home), tmp_path / "stderr.log", consent=None) as session:
        if read_only == "allow":
            assert await run(session, "echo", {"text": "unasked"}) == "unasked"
            assert await run(session, "add", {"a": 2, "b": 3}) == "5"
        else:
            assert (await refused(session, "echo", {"text": "x"}))[0] == -32015
        code, detail = await refused(session, "set_volume", {"level": 0.5})  # not read-only: still asks
        assert code == -32015
        assert "consent allow" in detail


async def test_always_for_the_app_does_not_cover_a_destructive_tool(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    user = Consenter("app")
    async with stdio_session(env_of(bus, home_with(tmp_path)), tmp_path / "stderr.log", consent=user) as session:
        assert await run(session, "echo", {"text": "first"}) == "first"
        assert await run(session, "set_volume", {"level": 0.25}) == "null"  # covered by "always for the app"
        assert len(user.questions) == 1
        user.decision = "deny"
        code, detail = await refused(session, "exit", {})  # asked on its own; refused, so it never ran
        assert (code, detail) == (-32004, 'the user refused "mcp" running dev.aai.echo:exit')
        assert len(user.questions) == 2
        assert "Its app marks it destructive" in user.messages[1]
        assert "destructive" not in user.messages[0]
        assert await run(session, "echo", {"text": "still here"}) == "still here"
        assert len(user.questions) == 2

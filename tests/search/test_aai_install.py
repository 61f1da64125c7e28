"""`aai_install`: an agent installs what search found, always with the user's yes, through the installed command
and the SDK's client over stdio (a user who accepts, one who declines, a client that cannot ask)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import Consenter, Inbox, error_of, stdio_session, text_of
from tests.mcpservers.test_server_approval import APP, GUIDE, Setup, setup  # noqa: F401 (the store fixture)

pytestmark = pytest.mark.anyio

SHOT = "org.gnome.shell.screenshot"


def home_with(tmp_path: Path, **consent: Any) -> Path:
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True)
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow", **consent}}))
    return home


def env_of(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"}


async def test_search_then_install_with_the_users_yes(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    user, inbox = Consenter("app"), Inbox()
    async with stdio_session(env_of(home), tmp_path / "gateway.log", consent=user, inbox=inbox) as session:
        hit = (await session.call_tool("aai_search", {"query": "take a screenshot"})).structured_content
        assert hit is not None
        assert (hit["results"][0]["app"]["id"], hit["results"][0]["installed"]) == (SHOT, False)
        answer = text_of(await session.call_tool("aai_install", {"app": SHOT}))
        assert answer.startswith(f"Installed GNOME screenshot ({SHOT}) from the library")
        assert "# GNOME screenshot Operation Guide" in answer
        question = user.messages[-1]
        assert f"wants to install GNOME screenshot ({SHOT})" in question
        assert "from the gateway's bundled library" in question
        assert "Verified: interface" in question
        assert "  screenshot_area" in question
        await inbox.wait_for("notifications/tools/list_changed")
        listed = [t.name for t in (await session.list_tools()).tools]
        assert "app_org_gnome_shell_screenshot" in listed
        found = (await session.call_tool("aai_search", {"query": "take a screenshot"})).structured_content
        assert found is not None
        assert found["results"][0]["installed"] is True
        again = text_of(await session.call_tool("aai_install", {"app": SHOT}))
        assert again.startswith(f"{SHOT} is installed already.")
    assert (home / ".aai" / SHOT / "aai.json").exists()


async def test_a_declined_install_writes_nothing(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    async with stdio_session(env_of(home), tmp_path / "gateway.log", consent=Consenter("deny")) as session:
        error = await error_of(session, "aai_install", {"app": SHOT})
    assert error.data is not None
    assert error.data["type"] == "PERMISSION_DENIED"
    assert "nothing was installed" in error.data["detail"]
    assert not (home / ".aai" / SHOT).exists()


async def test_a_client_that_cannot_ask_is_told_how_the_user_installs(tmp_path: Path) -> None:
    home = home_with(tmp_path)  # consent.default "allow" never approves an install
    async with stdio_session(env_of(home), tmp_path / "gateway.log", consent=None) as session:
        error = await error_of(session, "aai_install", {"app": SHOT})
    assert error.data is not None
    assert error.data["type"] == "CONSENT_REQUIRED"
    assert f"`aai-gateway install {SHOT}`" in error.data["detail"]
    assert not (home / ".aai" / SHOT).exists()


@pytest.mark.parametrize(("policy", "installed"), [("library", True), ("deny", False)])
async def test_consent_install_policies(tmp_path: Path, policy: str, installed: bool) -> None:
    home = home_with(tmp_path, install=policy)
    async with stdio_session(env_of(home), tmp_path / "gateway.log", consent=None) as session:
        result = await session.call_tool("aai_install", {"app": SHOT})
    assert result.is_error is not installed
    assert (home / ".aai" / SHOT / "aai.json").exists() is installed


async def test_unknown_and_malformed_ids_are_refused_clearly(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    async with stdio_session(env_of(home), tmp_path / "gateway.log") as session:
        unknown = await error_of(session, "aai_install", {"app": "org.gnome.shell.screenshoot"})
        missing = await error_of(session, "aai_install", {})
    assert unknown.data is not None
    assert unknown.data["type"] == "APP_NOT_FOUND"
    assert SHOT in unknown.data["detail"]
    assert missing.data is not None
    assert missing.data["type"] == "INVALID_PARAMS"


@pytest.mark.hostile("store")
async def test_a_stores_mcp_server_is_asked_about_whatever_the_policy(setup: Setup) -> None:  # noqa: F811
    config = json.loads((setup.home / ".aai" / "config.json").read_text())
    config["consent"] = {"default": "allow", "install": "library"}
    (setup.home / ".aai" / "config.json").write_text(json.dumps(config))
    async with setup.session(consent=None) as session:
        error = await error_of(session, "aai_install", {"app": APP})
    assert error.data is not None
    assert error.data["type"] == "CONSENT_REQUIRED"
    assert not (setup.home / ".aai" / APP).exists()
    user = Consenter("app")
    async with setup.session(consent=user) as session:
        answer = text_of(await session.call_tool("aai_install", {"app": APP}))
        assert answer.startswith(f"Installed Fromstore ({APP}) from {setup.url}/apps/{APP}/aai.json")
        question = user.messages[-1]
        assert "It is an MCP server: installing it approves running this on your machine:" in question
        assert "LD_LIBRARY_PATH=/nonexistent" in question
        assert "s3cr3t-v4lue" not in question
        assert "SHA-256" in question
        assert "Operation Guide" in text_of(await session.call_tool(GUIDE, {}))  # the install approved its start
        assert len(user.messages) == 1
    assert setup.started.exists()

"""Consent through the installed gateway: asked by MCP elicitation, or approved with the CLI, and revoked live."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.e2e.mcp_client import Consenter, error_of, http_session, stdio_session, text_of, web_gateway
from tests.support import TEST_APPS, Bus, gateway_command, install_descriptor

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CALLER = "mcp"  # the SDK client's clientInfo.name


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    return home


def env_of(bus: Bus, home: Path) -> dict[str, str]:
    return bus.env(HOME=str(home), AAI_PLATFORM="linux")


def configure(home: Path, consent: dict[str, Any]) -> None:
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": consent}), "utf-8")


async def echo(session: ClientSession, text: str = "hi") -> str:
    return text_of(await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": text}}))


async def add(session: ClientSession) -> str:
    return text_of(await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "add", "args": {"a": 2}}))


async def refused(session: ClientSession, tool: str = "echo", args: dict[str, Any] | None = None) -> tuple[int, str]:
    error = await error_of(session, "aai_exec", {"app": "dev.aai.echo", "tool": tool, "args": args or {"text": "x"}})
    assert error.data is not None
    return error.code, str(error.data["detail"])


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def decisions(env: dict[str, str]) -> list[dict[str, Any]]:
    listed = cli(env, "consent", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    found: list[dict[str, Any]] = json.loads(listed.stdout)["decisions"]
    return found


async def test_allow_once_asks_every_time(bus: Bus, echo_app: None, home: Path, tmp_path: Path) -> None:
    user = Consenter("once")
    env = env_of(bus, home)
    async with stdio_session(env, tmp_path / "stderr.log", consent=user) as session:
        assert await echo(session, "first") == "first"
        assert await echo(session, "second") == "second"
    assert len(user.questions) == 2
    assert user.messages[0].splitlines()[:2] == [
        '"mcp" wants to run echo of Echo (dev.aai.echo).',
        'Arguments: text: "first"',
    ]
    choices = user.questions[0].requested_schema["properties"]["decision"]["oneOf"]
    assert [c["const"] for c in choices] == ["once", "tool", "app", "deny", "never"]
    assert decisions(env) == []


async def test_always_for_a_tool_is_kept_across_restarts(bus: Bus, echo_app: None, home: Path, tmp_path: Path) -> None:
    user = Consenter("tool")
    env = env_of(bus, home)
    async with stdio_session(env, tmp_path / "stderr.log", consent=user) as session:
        await echo(session)
        await echo(session)
        assert len(user.questions) == 1
        assert await add(session) == "3"  # another tool of the app is asked about
        assert len(user.questions) == 2
    async with stdio_session(env, tmp_path / "stderr.log", consent=user) as session:
        await echo(session)
        await add(session)
    assert len(user.questions) == 2
    kept = decisions(env)
    assert sorted((d["caller"], d["app"], d["tool"], d["decision"]) for d in kept) == [
        (CALLER, "dev.aai.echo", "add", "allow"),
        (CALLER, "dev.aai.echo", "echo", "allow"),
    ]


async def test_always_for_the_app_covers_every_tool(bus: Bus, echo_app: None, home: Path, tmp_path: Path) -> None:
    user = Consenter("app")
    async with stdio_session(env_of(bus, home), tmp_path / "stderr.log", consent=user) as session:
        await echo(session)
        await add(session)
        await echo(session)
    assert len(user.questions) == 1


@pytest.mark.parametrize("answer", ["deny", "decline"])
async def test_deny_refuses_this_call_only(bus: Bus, echo_app: None, home: Path, tmp_path: Path, answer: str) -> None:
    user = Consenter(answer)
    async with stdio_session(env_of(bus, home), tmp_path / "stderr.log", consent=user) as session:
        code, detail = await refused(session)
        assert code == -32004
        assert detail == 'the user refused "mcp" running dev.aai.echo:echo'
        user.decision = "once"
        assert await echo(session) == "hi"
    assert len(user.questions) == 2


async def test_always_deny_is_kept_until_revoked(bus: Bus, echo_app: None, home: Path, tmp_path: Path) -> None:
    user = Consenter("never")
    env = env_of(bus, home)
    async with stdio_session(env, tmp_path / "stderr.log", consent=user) as session:
        code, detail = await refused(session)
        assert code == -32004
        (kept,) = decisions(env)
        assert f"`aai-gateway consent revoke --id {kept['id']}` undoes it" in detail
        code, detail = await refused(session)
        assert code == -32004
        assert f"refused by the stored decision {kept['id']}" in detail
        assert len(user.questions) == 1
        revoked = cli(env, "consent", "revoke", "--id", kept["id"])
        assert revoked.returncode == 0, revoked.stderr
        user.decision = "once"
        assert await echo(session) == "hi"  # asked again, without a restart
    assert len(user.questions) == 2


async def test_a_client_without_elicitation_is_told_how_to_approve(
    bus: Bus, echo_app: None, home: Path, tmp_path: Path
) -> None:
    env = env_of(bus, home)
    async with stdio_session(env, tmp_path / "stderr.log", consent=None) as session:
        code, detail = await refused(session)
        assert code == -32015
        assert "this client cannot ask the user (no MCP elicitation)" in detail
        approve = re.search(r"`(aai-gateway consent allow [^`]*)`", detail)
        assert approve is not None, detail
        assert approve.group(1) == 'aai-gateway consent allow --caller "mcp" dev.aai.echo --tool echo'

        listed = json.loads(cli(env, "consent", "list", "--json").stdout)
        (pending,) = listed["pending"]
        assert (pending["caller"], pending["app"], pending["tool"]) == (CALLER, "dev.aai.echo", "echo")
        assert pending["arguments"] == [["text", '"x"']]

        allowed = cli(env, *shlex.split(approve.group(1))[1:])
        assert allowed.returncode == 0, allowed.stderr
        assert 'Allowed: caller "mcp", dev.aai.echo:echo' in allowed.stdout
        assert await echo(session) == "hi"  # the same running gateway lets the retried call pass
        assert json.loads(cli(env, "consent", "list", "--json").stdout)["pending"] == []
        code, _ = await refused(session, "add", {"a": 1})  # only that tool was allowed
        assert code == -32015

        revoked = cli(env, "consent", "revoke", "--caller", CALLER, "dev.aai.echo", "--tool", "echo")
        assert revoked.returncode == 0, revoked.stderr
        code, _ = await refused(session)
        assert code == -32015

        assert cli(env, "consent", "allow", "dev.aai.echo").returncode == 0  # any caller, every tool
        assert await add(session) == "3"
        assert cli(env, "consent", "deny", "--caller", CALLER, "dev.aai.echo", "--tool", "add").returncode == 0
        code, detail = await refused(session, "add", {"a": 1})  # a deny wins over the allow
        assert code == -32004
        assert await echo(session) == "hi"


async def test_the_default_deny_and_deny_rules_refuse_without_asking(
    bus: Bus, echo_app: None, home: Path, tmp_path: Path
) -> None:
    user = Consenter("app")
    env = env_of(bus, home)
    configure(home, {"default": "deny"})
    async with stdio_session(env, tmp_path / "stderr.log", consent=user) as session:
        code, detail = await refused(session)
        assert code == -32004
        assert 'refused by consent.default "deny" of the config' in detail
        assert str(home / ".aai" / "config.json") in detail
    configure(home, {"rules": [{"app": "dev.aai.echo", "tool": "add", "decision": "deny"}]})
    async with stdio_session(env, tmp_path / "stderr.log", consent=user) as session:
        code, detail = await refused(session, "add", {"a": 1})
        assert code == -32004
        assert "refused by consent.rules[0] of the config" in detail
        assert await echo(session) == "hi"  # other tools follow the default: asked
    assert len(user.questions) == 1


def test_the_command_line_is_not_asked_but_follows_denials(bus: Bus, echo_app: None, home: Path) -> None:
    env = env_of(bus, home)
    configure(
        home,
        {"default": "deny", "rules": [{"caller": "cli", "app": "dev.aai.echo", "tool": "add", "decision": "deny"}]},
    )
    done = cli(env, "call", "dev.aai.echo", "echo", '{"text": "from the shell"}')
    assert (done.returncode, done.stdout.strip()) == (0, "from the shell")
    denied = cli(env, "call", "dev.aai.echo", "add", '{"a": 1}')
    assert denied.returncode == 1
    assert "[-32004 PERMISSION_DENIED]" in denied.stderr


async def test_over_http_the_question_travels_on_the_session_stream(
    bus: Bus, echo_app: None, home: Path, tmp_path: Path
) -> None:
    user = Consenter("tool")
    with web_gateway(env_of(bus, home), tmp_path / "stderr.log") as url:
        async with http_session(url, consent=user) as session:
            assert await echo(session) == "hi"
            assert await echo(session) == "hi"
        async with http_session(url, consent=None) as session:
            assert await echo(session) == "hi"  # the same caller, already allowed
            code, _ = await refused(session, "add", {"a": 1})
            assert code == -32015
    assert len(user.questions) == 1

"""The gateway as the MCP clients people run meet it, with no config: the README's client snippets, the
names those clients accept (`^[a-zA-Z0-9_-]{1,64}$`), texts that name only tools that are listed, errors
the model can read, and the MCP Inspector's command line over stdio and HTTP."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.mcp_client import http_session, stdio_session, text_of, web_gateway
from tests.support import EXAMPLES, FIXED_TOOLS, ROOT, Bus, echo_home, gateway_command, install_descriptor

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CLIENT_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""The tool names Claude Desktop and Code, Codex, Copilot and others accept."""
STDIO_CLIENTS = ["claude-desktop", "claude-code", "vscode", "codex"]
SEED_NAMES = (
    r"\baai:exec\b",
    r"\baai:batch\b",
    r"\baai:search\b",
    r"\baai:install\b",
    r"\bweb:discover\b",
    r"\bapp:[\w<]",
)
STRICT_NAMES = (
    r"\baai_exec\b",
    r"\baai_batch\b",
    r"\baai_search\b",
    r"\baai_install\b",
    r"\bweb_discover\b",
    r"\bapp_(?:<appId>|dev_)",
)
"""The other spelling's names, as they would appear in a text (not "app: " of an example or in prose)."""
INSPECTOR = ROOT / "tests" / "inspector" / "node_modules"


def snippets() -> dict[str, str]:
    """The README's client snippets: the code block after each `<!-- client: NAME -->` marker."""
    readme = (ROOT / "README.md").read_text()
    found = re.findall(r"<!-- client: (\S+) -->\n```\w*\n(.*?)```", readme, re.DOTALL)
    return dict(found)


def stdio_command(client: str) -> tuple[str, list[str]]:
    """The command and arguments a client's README snippet starts."""
    text = snippets()[client]
    if client == "claude-desktop":
        entry = json.loads(text)["mcpServers"]["aai"]
    elif client == "vscode":
        entry = json.loads(text)["servers"]["aai"]
        assert entry["type"] == "stdio"
    elif client == "codex":
        entry = tomllib.loads(text)["mcp_servers"]["aai"]
    else:
        words = shlex.split(text)
        assert words[:4] == ["claude", "mcp", "add", "aai"], words
        command, *args = words[words.index("--") + 1 :]
        entry = {"command": command, "args": args}
    return entry["command"], list(entry["args"])


def home_with_apps(tmp_path: Path, **config: Any) -> Path:
    """The echo app (allowed for every caller) and the notes example, whose id holds dots."""
    home = tmp_path / "home"
    echo_home(home, "*", **config)
    install_descriptor(home / ".aai", EXAMPLES / "dev.aai.notes" / "aai.json")
    return home


def env_of(bus: Bus, home: Path) -> dict[str, str]:
    return {**bus.env(), "HOME": str(home), "AAI_PLATFORM": "linux"}


async def check_a_client_session(session: ClientSession) -> None:
    """What every client does first: list, read a guide, run an operation, get an argument wrong."""
    tools = (await session.list_tools()).tools
    names = [tool.name for tool in tools]
    assert names == [
        *FIXED_TOOLS,
        "app_dev_aai_echo",
        "app_dev_aai_notes",
    ]
    assert all(CLIENT_NAME.match(name) for name in names), names
    guide = text_of(await session.call_tool("app_dev_aai_echo", {}))
    assert 'aai_exec({\napp: "dev.aai.echo",\ntool: "echo",' in guide
    assert text_of(await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "hi"}}))
    wrong = await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "add", "args": {"a": "one"}})
    assert wrong.is_error
    assert wrong.structured_content is not None
    error = wrong.structured_content["error"]
    assert (error["code"], error["type"]) == (-32005, "INVALID_PARAMS")
    assert "args.a" in error["detail"]
    [block] = wrong.content
    assert isinstance(block, types.TextContent)
    assert block.text.startswith("INVALID_PARAMS (-32005): ")
    assert "args.a" in block.text
    assert "\n" not in block.text


@pytest.mark.parametrize("client", STDIO_CLIENTS)
async def test_readme_snippet_starts_a_gateway_the_client_accepts(
    client: str, bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    command, args = stdio_command(client)
    assert (command, args) == ("aai-gateway", ["--mcp"])
    params = StdioServerParameters(command=gateway_command(), args=args, env=env_of(bus, home_with_apps(tmp_path)))
    with (tmp_path / "stderr.log").open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await check_a_client_session(session)


async def test_readme_http_snippet_reaches_the_running_gateway(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    configured = json.loads(snippets()["http"])["mcpServers"]["aai"]["url"]
    assert configured == "http://127.0.0.1:3000/mcp"
    with web_gateway(env_of(bus, home_with_apps(tmp_path)), tmp_path / "stderr.log") as url:
        assert url.rsplit(":", 1)[0] == configured.rsplit(":", 1)[0]
        async with http_session(url) as session:
            await check_a_client_session(session)


async def test_readme_remote_snippet_reaches_a_gateway_that_wants_a_token(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    env = env_of(bus, home_with_apps(tmp_path, mcpAuth="always"))
    made = subprocess.run([gateway_command(), "token"], env=env, capture_output=True, text=True, check=True)
    entry = json.loads(snippets()["remote"])["mcpServers"]["aai"]
    assert entry["url"] == "http://HOST:3000/mcp"
    assert entry["headers"] == {"Authorization": "Bearer <the token>"}
    headers = {"Authorization": entry["headers"]["Authorization"].replace("<the token>", made.stdout.strip())}
    with web_gateway(env, tmp_path / "stderr.log") as url:
        address = url.removeprefix("http://").removesuffix("/mcp")
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as client,
            streamable_http_client(entry["url"].replace("HOST:3000", address), http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await check_a_client_session(session)
        async with httpx2.AsyncClient() as client:
            assert (await client.post(url, json={})).status_code == 401


async def test_an_unknown_tool_name_is_a_protocol_error(bus: Bus, tmp_path: Path) -> None:
    async with stdio_session(env_of(bus, home_with_apps(tmp_path)), tmp_path / "stderr.log") as session:
        with pytest.raises(MCPError) as raised:
            await session.call_tool("no_such_tool", {})
    assert raised.value.error.code == -32602
    assert raised.value.error.data == {"type": "TOOL_NOT_FOUND", "detail": raised.value.error.data["detail"]}
    assert (
        "app_<appId>, aai_search, aai_install, aai_exec, aai_batch, aai_run, aai_wait, web_discover"
        in raised.value.error.message
    )


@asynccontextmanager
async def no_elicitation(env: dict[str, str], stderr: Path) -> AsyncIterator[ClientSession]:
    async with stdio_session(env, stderr, consent=None) as session:
        yield session


async def texts_an_agent_reads(session: ClientSession) -> list[str]:
    """Everything the gateway says to a model: instructions, descriptions, guides, and the errors of calls."""
    init = session.initialize_result
    assert init is not None
    texts = [init.instructions or ""]
    tools = (await session.list_tools()).tools
    texts += [json.dumps(tool.model_dump(mode="json"), ensure_ascii=False) for tool in tools]
    names = {tool.name for tool in tools}
    guides = [tool.name for tool in tools if tool.name.startswith(("app_", "app:"))]
    exec_name = next(n for n in names if n.startswith("aai") and n.endswith("exec"))
    batch_name = next(n for n in names if n.endswith("batch"))
    discover_name = next(n for n in names if n.endswith("discover"))
    calls: list[tuple[str, dict[str, Any]]] = [(name, {}) for name in guides]
    calls += [
        (exec_name, {"app": "no.such.app", "tool": "x"}),
        (exec_name, {"tool": "x"}),
        (exec_name, {"app": "dev.aai.echo", "tool": "nothing"}),
        (exec_name, {"app": "dev.aai.echo", "tool": "add", "args": {"a": "one"}}),
        (exec_name, {"app": "dev.aai.notes", "tool": "count_notes"}),  # consent required: no rule, no elicitation
        (batch_name, {"calls": "x"}),
        (batch_name, {"calls": [{"app": "dev.aai.notes", "tool": "count_notes"}, {"tool": 1}]}),
        (discover_name, {}),
    ]
    for name, arguments in calls:
        result = await session.call_tool(name, arguments)
        texts += [block.text for block in result.content if isinstance(block, types.TextContent)]
        if result.structured_content is not None:
            texts.append(json.dumps(result.structured_content, ensure_ascii=False))
    try:
        await session.call_tool("nothing_at_all", {})
    except MCPError as exc:
        texts.append(exc.error.message)
    return texts


@pytest.mark.parametrize("style", ["strict", "seed"])
async def test_every_text_names_tools_as_they_are_listed(bus: Bus, echo_app: None, tmp_path: Path, style: str) -> None:
    config = {} if style == "strict" else {"toolNames": "seed"}
    async with no_elicitation(env_of(bus, home_with_apps(tmp_path, **config)), tmp_path / "stderr.log") as session:
        listed = [tool.name for tool in (await session.list_tools()).tools]
        texts = await texts_an_agent_reads(session)
    if style == "strict":
        assert all(CLIENT_NAME.match(name) for name in listed), listed
    else:
        assert listed == [
            "aai:search",
            "aai:install",
            "aai:exec",
            "aai:batch",
            "aai:run",
            "aai:wait",
            "web:discover",
            "app:dev.aai.echo",
            "app:dev.aai.notes",
        ]
    other = SEED_NAMES if style == "strict" else STRICT_NAMES
    joined = "\n".join(texts)
    assert "needs the user's consent" in joined  # the consent instructions were among the texts
    for name in other:
        found = [text[max(0, m.start() - 80) : m.end() + 40] for text in texts if (m := re.search(name, text))]
        assert not found, f"{name!r} in texts an agent reads, but the tools are listed as {listed}: {found}"
    spoken = set(re.findall(r"\b(?:aai[:_](?:exec|batch)|web[:_]discover|app[:_][\w.-]+)", joined))
    spoken -= {"app_<appId>", "app:<appId>"}
    assert spoken <= set(listed), spoken - set(listed)


def inspector(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The MCP Inspector's command line (`inspector --cli`), on the Node 22 that tests/inspector installs."""
    node = next(INSPECTOR.glob("node-linux-*/bin/node"))
    launcher = INSPECTOR / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
    return subprocess.run(
        [str(node), str(launcher), "--cli", *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def inspector_checks(target: list[str], env: dict[str, str]) -> None:
    listing = inspector(*target, "--method", "tools/list", "--strict", env=env)
    assert listing.returncode == 0, listing.stderr
    names = [tool["name"] for tool in json.loads(listing.stdout)["tools"]]
    assert names == [
        *FIXED_TOOLS,
        "app_dev_aai_echo",
        "app_dev_aai_notes",
    ]
    assert not listing.stderr.strip(), listing.stderr  # the Inspector's portability check: nothing to report
    guide = inspector(*target, "--method", "tools/call", "--tool-name", "app_dev_aai_notes", env=env)
    assert guide.returncode == 0, guide.stderr
    assert "aai_exec({" in json.loads(guide.stdout)["content"][0]["text"]
    run = ["--method", "tools/call", "--tool-name", "aai_exec", "--tool-arg", "app=dev.aai.echo", "tool=echo"]
    done = inspector(*target, *run, 'args={"text": "from the inspector"}', env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["content"][0]["text"] == "from the inspector"
    wrong = inspector(*target, *run, 'args={"text": 5}', env=env)
    answer, _ = json.JSONDecoder().raw_decode(wrong.stdout)  # then the CLI's own note that the tool failed
    assert answer["isError"] is True
    assert answer["structuredContent"]["error"]["type"] == "INVALID_PARAMS"
    assert "args.text" in answer["content"][0]["text"]


def test_the_mcp_inspector_cli_over_stdio(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    env = env_of(bus, home_with_apps(tmp_path))
    # The Inspector passes a server only a few variables of its own environment; the rest are given with -e.
    given = [f"{key}={env[key]}" for key in ("HOME", "DBUS_SESSION_BUS_ADDRESS", "AAI_PLATFORM")]
    inspector_checks([*(arg for pair in given for arg in ("-e", pair)), gateway_command(), "--mcp"], env)


def test_the_mcp_inspector_cli_over_http(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    env = env_of(bus, home_with_apps(tmp_path))
    with web_gateway(env, tmp_path / "stderr.log") as url:
        inspector_checks([url], env)


async def test_tools_are_listed_in_the_same_order_every_time(bus: Bus, tmp_path: Path) -> None:
    """Clients cache and diff listings: apps come in the order of their folders' names, then the fixed tools,
    whatever order the folders were made in, in every session and over both transports."""
    home = tmp_path / "home"
    descriptor = json.loads((EXAMPLES / "dev.aai.notes" / "aai.json").read_text())
    for app_id in ("org.zeta.app", "com.alpha.app", "net.mid-dle.app"):
        (home / ".aai" / app_id).mkdir(parents=True)
        (home / ".aai" / app_id / "aai.json").write_text(json.dumps({**descriptor, "appId": app_id}))
    expected = [
        *FIXED_TOOLS,
        "app_com_alpha_app",
        "app_net_mid-dle_app",
        "app_org_zeta_app",
    ]
    env = env_of(bus, home)
    for _ in range(2):
        async with stdio_session(env, tmp_path / "stderr.log") as session:
            assert [tool.name for tool in (await session.list_tools()).tools] == expected
            assert [tool.name for tool in (await session.list_tools()).tools] == expected
    with web_gateway(env, tmp_path / "stderr.log") as url:
        async with http_session(url) as session:
            assert [tool.name for tool in (await session.list_tools()).tools] == expected

"""Consent questions for clients of the 2026-07-28 revision, which take no request in the middle of a call:
the call answers an input-required result holding the question, and the client calls again with the
answer. Driven by the official SDK client in its 2026-07-28 mode, which answers such results with its
elicitation callback, against the installed `aai-gateway` over stdio and over HTTP (`--web`)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext, ElicitationFnT

from tests.e2e.mcp_client import Consenter, http_session, text_of, web_gateway
from tests.mcpservers.servers import descriptor, hostile, install
from tests.mcpservers.test_server_approval import APP, GUIDE, Setup, setup  # noqa: F401 (the store fixture)
from tests.support import gateway_command

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ME = types.Implementation(name="modern-client", version="1")


@asynccontextmanager
async def modern_stdio(made: Setup | Path, consent: ElicitationFnT | None) -> AsyncIterator[Client]:
    """The SDK's client in the 2026-07-28 era over stdio, for a setup's home or `made` as the home folder's
    parent; `consent` None declares no elicitation."""
    tmp = made if isinstance(made, Path) else made.tmp
    env = {"HOME": str(tmp / "home"), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"}
    params = StdioServerParameters(command=gateway_command(), args=["--mcp"], env=env)
    with (tmp / "gateway.log").open("a") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog), mode=MODERN, client_info=ME, elicitation_callback=consent
        ) as client:
            yield client


def modern_http(url: str, consent: ElicitationFnT | None) -> Client:
    return Client(url, mode=MODERN, client_info=ME, elicitation_callback=consent)


class ByKind(Consenter):
    """A user answering a tool's question with `tool` and an install's or a server's with `other`."""

    def __init__(self, tool: str, other: str = "app") -> None:
        super().__init__(tool)
        self.tool, self.other = tool, other

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams), params
        choices = [c["const"] for c in params.requested_schema["properties"]["decision"]["oneOf"]]
        self.decision = self.tool if "once" in choices else self.other
        return await super().__call__(context, params)


async def error_in(client: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert result.is_error, result
    assert result.structured_content is not None
    error: dict[str, Any] = result.structured_content["error"]
    return error


def history(made: Setup) -> list[dict[str, Any]]:
    done = made.cli("history", "--json")
    assert done.returncode == 0, done.stderr
    records: list[dict[str, Any]] = json.loads(done.stdout)
    return records


def listing_its_tool(made: Setup) -> Setup:
    """The store's index naming the server's tool, for search to find."""
    index = made.store / "index.json"
    listed = json.loads(index.read_text())
    listed["entries"][0]["tools"] = ["echo"]
    index.write_text(json.dumps(listed))
    return made


async def search_install_exec(client: Any, made: Setup, user: Consenter) -> None:
    """Search finds the store's server (`listing_its_tool`), the user agrees to its install, then to its tool:
    it runs."""
    found = (await client.call_tool("aai_search", {"query": "echo"})).structured_content
    assert found is not None
    hit = next(r for r in found["results"] if r["app"]["id"] == APP)
    assert hit["installed"] is False
    installed = text_of(await client.call_tool("aai_install", {"app": APP}))
    assert installed.startswith(f"Installed Fromstore ({APP}) from {made.url}/apps/{APP}/aai.json"), installed
    assert "Operation Guide" in installed
    assert "It is an MCP server: installing it approves running this on your machine:" in user.messages[0]
    assert (made.home / ".aai" / APP / "aai.json").exists()
    assert not made.started.exists(), "the server started before anything called it"
    echoed = await client.call_tool("aai_exec", {"app": APP, "tool": "echo", "args": {"x": 1}})
    assert json.loads(text_of(echoed)) == {"x": 1}
    assert made.started.exists()
    assert len(user.messages) == 2, user.messages  # the install, then the tool (consent.default "ask")
    assert f"wants to run echo of Fromstore ({APP})" in user.messages[1]


async def test_install_and_a_call_asked_by_input_required_results_over_stdio(setup: Setup) -> None:  # noqa: F811
    user = Consenter("app")
    async with modern_stdio(listing_its_tool(setup), user) as client:
        await search_install_exec(client, setup, user)
    [call] = history(setup)  # the rounds that asked are not calls that failed
    assert (call["tool"], call["status"], call["consent"]) == ("echo", "ok", "app")


async def test_a_declined_install_writes_nothing(setup: Setup) -> None:  # noqa: F811
    user = Consenter("decline")
    async with modern_stdio(setup, user) as client:
        error = await error_in(client, "aai_install", {"app": APP})
    assert error["type"] == "PERMISSION_DENIED", error
    assert "nothing was installed" in error["detail"]
    assert len(user.messages) == 1
    assert not (setup.home / ".aai" / APP).exists()
    assert not setup.started.exists()


async def test_a_modern_client_without_elicitation_is_told_how_to_approve(setup: Setup) -> None:  # noqa: F811
    async with modern_stdio(setup, None) as client:
        error = await error_in(client, "aai_install", {"app": APP})
    assert error["type"] == "CONSENT_REQUIRED", error
    assert f"`aai-gateway install {APP}`" in error["detail"]
    assert not (setup.home / ".aai" / APP).exists()


async def test_a_servers_launch_then_its_tool_once_then_denied(setup: Setup) -> None:  # noqa: F811
    setup.install()  # by the user, from the store: its command line still needs a yes
    user = ByKind("once")
    async with modern_stdio(setup, user) as client:
        echoed = await client.call_tool("aai_exec", {"app": APP, "tool": "echo", "args": {"n": 1}})
        assert json.loads(text_of(echoed)) == {"n": 1}
        assert len(user.messages) == 2, user.messages  # the command line, then the tool
        assert "hostile_server.py" in user.messages[0]
        assert "wants to run echo" in user.messages[1]
        user.tool = "deny"
        error = await error_in(client, "aai_exec", {"app": APP, "tool": "echo", "args": {"n": 2}})
        assert error["type"] == "PERMISSION_DENIED", error
        assert len(user.messages) == 3, user.messages  # "once" is asked again; the command line is not
        assert "Operation Guide" in text_of(await client.call_tool(GUIDE, {}))
    calls = sorted(history(setup), key=lambda r: r["time"])
    assert [(c["status"], c["consent"]) for c in calls] == [("ok", "once"), ("error", "deny")], calls


def http_setup(made: Setup) -> AbstractContextManager[str]:
    return web_gateway(made.env, made.tmp / "gateway.log")


async def test_over_http_in_the_2026_era(setup: Setup) -> None:  # noqa: F811
    with http_setup(listing_its_tool(setup)) as url:
        refused = Consenter("deny")
        async with modern_http(url, refused) as client:
            error = await error_in(client, "aai_install", {"app": APP})
        assert error["type"] == "PERMISSION_DENIED", error
        async with modern_http(url, None) as client:
            error = await error_in(client, "aai_install", {"app": APP})
        assert error["type"] == "CONSENT_REQUIRED", error
        assert not (setup.home / ".aai" / APP).exists()
        user = Consenter("app")
        async with modern_http(url, user) as client:
            await search_install_exec(client, setup, user)


async def test_over_http_in_the_2025_era(setup: Setup) -> None:  # noqa: F811
    with http_setup(listing_its_tool(setup)) as url:
        async with http_session(url, consent=Consenter("deny")) as session:
            result = await session.call_tool("aai_install", {"app": APP})
            assert result.is_error
        assert not (setup.home / ".aai" / APP).exists()
        async with http_session(url, consent=None) as session:
            result = await session.call_tool("aai_install", {"app": APP})
            assert result.is_error
            assert result.structured_content is not None
            assert result.structured_content["error"]["type"] == "CONSENT_REQUIRED"
        user = Consenter("app")
        async with http_session(url, consent=user) as session:
            await search_install_exec(session, setup, user)


@pytest.mark.hostile("validation")
async def test_a_tampered_state_or_a_forged_answer_installs_nothing(setup: Setup) -> None:  # noqa: F811
    async with modern_stdio(setup, Consenter("app")) as client:
        session = client.session
        first = await session.call_tool("aai_install", {"app": APP}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first
        assert first.input_requests is not None
        assert first.request_state is not None
        [(name, request)] = first.input_requests.items()
        assert isinstance(request, types.ElicitRequest)
        yes = types.ElicitResult(action="accept", content={"decision": "app"})
        state = first.request_state

        tampered = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
        with pytest.raises(MCPError) as refused:
            await session.call_tool("aai_install", {"app": APP}, input_responses={name: yes}, request_state=tampered)
        assert refused.value.error.code == types.INVALID_PARAMS
        assert "requestState" in refused.value.error.message

        with pytest.raises(MCPError):  # the state of this call, replayed on another
            await session.call_tool(
                "aai_install", {"app": "org.gnome.shell.screenshot"}, input_responses={name: yes}, request_state=state
            )

        # answers to a question not asked are ignored, and one left unanswered is asked again (SEP-2322)
        forged: list[tuple[types.InputResponses, str | None]] = [({"consent-other": yes}, state), ({}, state)]
        forged.append(({name: yes}, None))
        for responses, sent_state in forged:
            again = await session.call_tool(
                "aai_install",
                {"app": APP},
                input_responses=responses,
                request_state=sent_state,
                allow_input_required=True,
            )
            assert isinstance(again, types.InputRequiredResult), again
            assert again.input_requests is not None
            assert list(again.input_requests) == [name]

        not_offered = types.ElicitResult(action="accept", content={"decision": "once"})
        wrong = await session.call_tool(
            "aai_install", {"app": APP}, input_responses={name: not_offered}, request_state=state
        )
        assert "without a decision the form offered" in text_in(wrong)

        roots = types.ListRootsResult(roots=[])
        not_a_form = await session.call_tool(
            "aai_install", {"app": APP}, input_responses={name: roots}, request_state=state
        )
        assert "must be the result of the form elicitation asked" in text_in(not_a_form)
    assert not (setup.home / ".aai" / APP).exists()
    assert not setup.started.exists()


def text_in(result: types.CallToolResult | types.InputRequiredResult) -> str:
    """The text of an INVALID_PARAMS tool error."""
    assert isinstance(result, types.CallToolResult), result
    assert result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert block.text.startswith("INVALID_PARAMS"), block.text
    return block.text


def three_tools(tmp_path: Path) -> dict[str, Path]:
    """A server (written by the user: its start needs no approval) with tools `free` (a rule allows it), `a`
    and `b`, each touching a file when it runs; the files by tool."""
    ran = {name: tmp_path / f"ran-{name}" for name in ("free", "a", "b")}
    plan = {
        "tools": [{"name": name, "inputSchema": {"type": "object"}} for name in ran],
        "calls": {name: [{"touch": str(path)}, {"echo": True}] for name, path in ran.items()},
    }
    rule = {"app": "mcp.three", "tool": "free", "decision": "allow"}
    install(
        tmp_path / "home" / ".aai",
        descriptor("mcp.three", hostile(tmp_path / "plan.json", plan)),
        config={"consent": {"default": "ask", "rules": [rule]}},
    )
    return ran


async def test_a_batch_asks_every_question_before_any_call_runs(tmp_path: Path) -> None:
    ran = three_tools(tmp_path)
    batch = {"calls": [{"app": "mcp.three", "tool": name, "args": {"n": name}} for name in ran]}
    async with modern_stdio(tmp_path, Consenter("once")) as client:
        first = await client.session.call_tool("aai_batch", batch, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first
        assert first.input_requests is not None
        asked = sorted(r.params.message for r in first.input_requests.values() if isinstance(r, types.ElicitRequest))
        assert len(asked) == 2, asked
        assert "wants to run a of" in asked[0]
        assert "wants to run b of" in asked[1]
        assert not any(path.exists() for path in ran.values()), "a call ran before the batch's questions"
    user = Consenter("once")
    async with modern_stdio(tmp_path, user) as client:
        report = (await client.call_tool("aai_batch", batch)).structured_content
    assert report is not None
    assert (report["ok"], report["error"]) == (3, 0), report
    assert len(user.messages) == 2, user.messages  # in one round
    assert all(path.exists() for path in ran.values())
    records = json.loads(subprocess_history(tmp_path))
    assert sorted((r["tool"], r["consent"]) for r in records) == [("a", "once"), ("b", "once"), ("free", None)]


async def test_a_plan_is_agreed_to_in_a_round_before_any_step_runs(tmp_path: Path) -> None:
    ran = three_tools(tmp_path)
    plan = {"steps": [{"id": name, "app": "mcp.three", "tool": name, "args": {}} for name in ran]}
    async with modern_stdio(tmp_path, Consenter("once")) as client:
        first = await client.session.call_tool("aai_run", plan, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first
        assert first.input_requests is not None
        assert len(first.input_requests) == 1
        assert not any(path.exists() for path in ran.values()), "a step ran before the plan was agreed to"
    user = Consenter("once")
    async with modern_stdio(tmp_path, user) as client:
        result = await client.call_tool("aai_run", plan)
    assert not result.is_error, result
    assert len(user.messages) == 1, user.messages
    assert "calls 2 tool(s) not allowed yet" in user.messages[0]
    assert all(path.exists() for path in ran.values())


def subprocess_history(tmp_path: Path) -> str:
    env = {"HOME": str(tmp_path / "home"), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"}
    done = subprocess.run(
        [gateway_command(), "history", "--json"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout

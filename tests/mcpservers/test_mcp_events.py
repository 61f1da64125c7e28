"""An MCP server's own notifications as events of its app, waited on through the installed gateway: the real
`@modelcontextprotocol/server-everything` (its logging and resource updates, with the events its capabilities
give), and the hostile server (a flood, a 10 MB message, a server that dies while a wait is on)."""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession

from tests.e2e.mcp_client import error_of, http_session, text_of
from tests.e2e.test_events import gateway_rss
from tests.e2e.test_serve import gateway as cli
from tests.e2e.test_serve import serving
from tests.library.waiting import waiting
from tests.mcpservers.servers import descriptor, hostile, install, marked, stdio
from tests.mcpservers.test_mcp_apps import env_of, exec_, gateway
from tests.support import wait_until

pytestmark = pytest.mark.anyio

EVERYTHING = "mcp.everything"
DOC = "demo://resource/static/document/architecture.md"
LEVELS = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
FLOOD = 25_000


def everything() -> dict[str, Any]:
    return descriptor(EVERYTHING, stdio("everything"))


async def called(session: ClientSession, app: str, tool: str, args: dict[str, Any] | None = None) -> str:
    result = await exec_(session, app, tool, args)
    assert not result.is_error, text_of(result)
    return text_of(result)


async def test_a_servers_capabilities_give_its_app_events_listed_in_its_guide(tmp_path: Path) -> None:
    async with gateway(tmp_path, everything()) as session:
        guide = text_of(await session.call_tool("app_mcp_everything", {}))
        assert "## Events" in guide
        for name in ("resource_updated", "resources_changed", "tools_changed", "prompts_changed", "log_message"):
            assert f"### {name}\n" in guide
        assert "**Payload**: `notifications/message`: the notification's params: {level, logger?, data}" in guide
        assert "filter: \"uri == 'file:///path/of/the/resource'\"" in guide
        # a resource update names its resource, or nothing would be subscribed to
        error = await error_of(session, "aai_wait", {"app": EVERYTHING, "event": "resource_updated", "timeout": 5})
        assert isinstance(error.data, dict)
        assert error.data["type"] == "INVALID_PARAMS"
        assert "give a filter naming the one you mean, such as uri == 'file:///path'" in error.data["detail"]


async def test_a_wait_returns_the_servers_logging_message(tmp_path: Path) -> None:
    """server-everything logs one random-levelled message at once when its simulated logging is switched on."""
    async with gateway(tmp_path, everything()) as session:
        async with waiting(session, app=EVERYTHING, event="log_message", timeout=60) as wait:
            await called(session, EVERYTHING, "toggle-simulated-logging")
        answer = await wait.answer()
        assert (answer["app"], answer["event"], answer["timedOut"]) == (EVERYTHING, "log_message", False)
        payload = answer["payload"]
        assert payload["level"] in LEVELS
        assert payload["data"].lower().startswith(payload["level"])
        assert "message" in payload["data"]


async def test_a_resource_is_subscribed_to_while_a_wait_on_its_updates_is_on(tmp_path: Path) -> None:
    """The server says (by a logging message) that it got the unsubscribe once the wait is over."""
    async with gateway(tmp_path, everything()) as session:
        async with waiting(
            session, app=EVERYTHING, event="log_message", filter="contains(data, 'Unsubscribe')", timeout=60
        ) as unsubscribed:
            async with waiting(
                session, app=EVERYTHING, event="resource_updated", filter=f"uri == '{DOC}'", timeout=60
            ) as updated:
                await called(session, EVERYTHING, "toggle-subscriber-updates")  # sends updates at once, then every 5 s
            answer = await updated.answer()
            assert answer["payload"] == {"uri": DOC}
        said = (await unsubscribed.answer())["payload"]
        assert said == {"level": "info", "data": f"Received Unsubscribe Resource request: {DOC} "}


def hostile_server(tmp_path: Path, mark: str = "", **plan: Any) -> dict[str, Any]:
    names = ["echo", *plan.get("calls", {})]
    tools = [{"name": name, "description": name, "inputSchema": {"type": "object"}} for name in names]
    plan = {"capabilities": {"tools": {}, "logging": {}, "resources": {"subscribe": True}}, "tools": tools, **plan}
    return descriptor("mcp.hostile", hostile(tmp_path / "plan.json", plan, mark=mark))


async def test_declared_events_name_their_resource_and_least_level(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    calls = {
        "other": [{"notify": 1, "method": "notifications/resources/updated", "params": {"uri": "file:///other"}}],
        "notes": [{"notify": 1, "method": "notifications/resources/updated", "params": {"uri": "file:///notes"}}],
        "chatter": [{"log": 3, "level": "info"}, {"log": 1, "level": "error"}],
    }
    app = hostile_server(tmp_path, calls=calls, requestsFile=str(requests))
    app["events"] = [
        {"name": "notes_changed", "description": "The notes changed.", "mcp": {"notification": UPDATED, "uri": NOTES}},
        {"name": "errors", "description": "Errors only.", "mcp": {"notification": MESSAGE, "level": "error"}},
    ]
    async with gateway(tmp_path, app) as session:
        guide = text_of(await session.call_tool("app_mcp_hostile", {}))
        assert "### notes_changed\n" in guide
        assert "### log_message\n" in guide  # the server's own, beside the declared ones
        async with waiting(session, app="mcp.hostile", event="notes_changed", timeout=60) as wait:
            await called(session, "mcp.hostile", "other")
            await called(session, "mcp.hostile", "notes")
        assert (await wait.answer())["payload"] == {"uri": NOTES}
        async with waiting(session, app="mcp.hostile", event="errors", timeout=60) as wait:
            await called(session, "mcp.hostile", "chatter")
        assert (await wait.answer())["payload"]["level"] == "error"

        def asked() -> list[Any]:
            return [json.loads(line) for line in requests.read_text().splitlines()]

        with anyio.fail_after(15):
            while len(asked()) < 2:
                await anyio.sleep(0.05)
        assert asked() == [["resources/subscribe", {"uri": NOTES}], ["resources/unsubscribe", {"uri": NOTES}]]


UPDATED = "notifications/resources/updated"
MESSAGE = "notifications/message"
NOTES = "file:///notes"


@pytest.mark.hostile("mcp-server")
async def test_a_flood_of_notifications_keeps_memory_bounded_and_the_gateway_answering(tmp_path: Path) -> None:
    app = hostile_server(tmp_path, calls={"flood": [{"log": FLOOD, "fill": 4000}]})
    async with gateway(tmp_path, app) as session:
        assert "hello" in await called(session, "mcp.hostile", "echo", {"word": "hello"})
        home = str(tmp_path / "home")
        async with (
            waiting(
                session, app="mcp.hostile", event="log_message", filter=f"data.n == `{FLOOD - 1}`", timeout=120
            ) as last,
            waiting(session, app="mcp.hostile", event="log_message", timeout=120) as first,
        ):
            before = gateway_rss(home)
            assert await called(session, "mcp.hostile", "flood") == "done"
        assert (await first.answer())["payload"]["data"]["n"] == 0
        assert (await last.answer())["payload"]["data"]["n"] == FLOOD - 1  # every one was read
        grown = gateway_rss(home) - before
        print(f"{FLOOD:,} notifications of 4 kB: the gateway grew {grown} kB")
        assert grown < 64 * 1024, f"the gateway grew by {grown} kB during the flood"
        assert "after" in await called(session, "mcp.hostile", "echo", {"word": "after"})


@pytest.mark.hostile("mcp-server")
async def test_a_ten_megabyte_notification_comes_as_a_note(tmp_path: Path) -> None:
    calls = {"huge": [{"log": 1, "fill": 10_000_000}], "small": [{"log": 1, "fill": 5}]}
    async with gateway(tmp_path, hostile_server(tmp_path, calls=calls)) as session:
        async with waiting(session, app="mcp.hostile", event="log_message", timeout=60) as wait:
            await called(session, "mcp.hostile", "huge")
        payload = (await wait.answer())["payload"]
        assert payload["truncated"] is True
        assert "more than 262144" in payload["note"]
        async with waiting(session, app="mcp.hostile", event="log_message", timeout=60) as wait:
            await called(session, "mcp.hostile", "small")
        assert (await wait.answer())["payload"] == {"level": "info", "data": {"n": 0, "text": "xxxxx"}}


@pytest.mark.hostile("mcp-server")
async def test_a_server_that_dies_during_a_wait_ends_it_saying_so(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    calls = {"die": [{"stderr": "out of disk"}, {"exit": 3}], "small": [{"log": 1}]}
    async with gateway(tmp_path, hostile_server(tmp_path, mark, calls=calls)) as session:
        async with waiting(session, app="mcp.hostile", event="log_message", timeout=600) as wait:
            assert marked(mark)
            died = await exec_(session, "mcp.hostile", "die")
            assert died.is_error
            with anyio.fail_after(30):  # the wait of 600 s ends with the server, not at its timeout
                while wait.result is None:
                    await anyio.sleep(0.05)
        assert wait.result.is_error, wait.result
        (shown,) = wait.result.content
        assert isinstance(shown, types.TextContent)
        said = shown.text
        assert "APP_NOT_RUNNING" in said
        assert (
            "mcp.hostile ended while its event log_message was listened for: the server exited with code 3; "
            "it said: out of disk; it is started again on the next call or wait"
        ) in said
        async with waiting(session, app="mcp.hostile", event="log_message", timeout=60) as again:
            await called(session, "mcp.hostile", "small")
        assert (await again.answer())["payload"]["data"]["n"] == 0


async def test_serve_runs_a_workflow_triggered_by_a_resource_update(tmp_path: Path) -> None:
    """`aai-gateway serve` subscribes the trigger's resource; server-everything's updates start the workflow."""
    home = tmp_path / "home"
    install(home / ".aai", everything(), config={"consent": {"default": "allow"}})
    (home / ".aai" / "workflows").mkdir()
    workflow = {
        "name": "Say which document changed",
        "on": [{"app": EVERYTHING, "event": "resource_updated", "filter": f"uri == '{DOC}'"}],
        "steps": [{"id": "say", "app": EVERYTHING, "tool": "echo", "args": {"message": "${event.payload.uri}"}}],
    }
    (home / ".aai" / "workflows" / "changed.json").write_text(json.dumps(workflow))
    env = env_of(home)
    approved = cli(env, "workflow", "approve", "changed", "--yes")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    log = tmp_path / "serve.log"

    def triggered_runs() -> list[dict[str, Any]]:
        listed = json.loads(cli(env, "history", "--json").stdout)
        return [e for e in listed if e["app"] == "aai.workflows" and e["caller"] == "trigger"]

    with serving(env, log) as (proc, url):
        wait_until(lambda: "listening for resource_updated of mcp.everything" in log.read_text(), 60, "the trigger")
        async with http_session(url) as session:
            await called(session, EVERYTHING, "toggle-subscriber-updates")
        wait_until(lambda: bool(triggered_runs()), 30, "the triggered run to be recorded")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0, log.read_text()
    run = triggered_runs()[0]
    assert (run["tool"], run["status"]) == ("changed", "ok"), run
    assert run["args"]["event"]["payload"] == {"uri": DOC}
    (step,) = run["children"]
    assert (step["app"], step["tool"], step["status"], step["args"]) == (EVERYTHING, "echo", "ok", {"message": DOC})

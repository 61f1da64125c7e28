"""Every kind of executor with telemetry on: each call runs and is a span (`execute <automation>`), and an
MCP server's app keeps what its executor can do besides running calls (its tools, its list changes), over
MCP and through `aai-gateway call`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import stdio_session, text_of
from tests.e2e.test_com import ENVELOPE, STANDIN
from tests.e2e.test_rest import SHAPE_A, RestServer, rest_server  # noqa: F401 (fixture)
from tests.e2e.test_telemetry import Receiver, receiver  # noqa: F401 (fixture)
from tests.mcpservers.servers import descriptor, hostile, install, stdio
from tests.support import ROOT, TEST_APPS, Bus, gateway_command, install_descriptor, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

FAST = {"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_METRICS_EXPORTER": "none"}


def exec_args(app: str, tool: str, **args: Any) -> dict[str, Any]:
    return {"app": app, "tool": tool, "args": args}


def clean(env: dict[str, str]) -> dict[str, str]:
    """This process's environment without its OTEL_* variables, which would otherwise leak in."""
    return {k: v for k, v in env.items() if not k.startswith("OTEL_")}


def ran(found: Receiver, automation: str) -> int:
    with found.lock:
        return sum(s.name == f"execute {automation}" for s in found.spans)


async def test_dbus_rest_and_mcp_servers_run_and_are_traced(
    bus: Bus,
    echo_app: None,
    rest_server: RestServer,  # noqa: F811
    receiver: Receiver,  # noqa: F811
    tmp_path: Path,
) -> None:
    aai = tmp_path / "home" / ".aai"
    hostile_plan = {"calls": {"echo": [{"notify": 1}, {"echo": True}]}}
    install(
        aai,
        descriptor("mcp.memory", stdio("memory", MEMORY_FILE_PATH=str(tmp_path / "memory.jsonl"))),
        descriptor("mcp.hostile", hostile(tmp_path / "plan.json", hostile_plan)),
        config={"consent": {"default": "allow"}, "web": {"allowHttpLoopback": True}},
    )
    install_descriptor(aai, TEST_APPS / "dev.aai.echo" / "aai.json")
    rest = json.loads(SHAPE_A.read_text())
    rest["platforms"]["web"]["base_url"] = f"{rest_server.url}/v1"
    (aai / "dev.aai.rest").mkdir()
    (aai / "dev.aai.rest" / "aai.json").write_text(json.dumps(rest))
    env = clean(bus.env(HOME=str(tmp_path / "home"), AAI_PLATFORM="linux")) | FAST
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url

    async with stdio_session(env, tmp_path / "gateway.log") as session:
        assert "### search_nodes" in text_of(await session.call_tool("app_mcp_memory", {}))
        assert "### echo" in text_of(await session.call_tool("app_mcp_hostile", {}))
        entity = {"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}
        added = await session.call_tool("aai_exec", exec_args("mcp.memory", "create_entities", entities=[entity]))
        assert not added.is_error, text_of(added)
        assert "Ada" in text_of(await session.call_tool("aai_exec", exec_args("mcp.memory", "read_graph")))
        for _ in range(2):  # the server says its tools changed: listed again, and still served
            echoed = await session.call_tool("aai_exec", exec_args("mcp.hostile", "echo", x=1))
            assert json.loads(text_of(echoed)) == {"x": 1}
        assert text_of(await session.call_tool("aai_exec", exec_args("dev.aai.echo", "echo", text="hi"))) == "hi"
        created = await session.call_tool("aai_exec", exec_args("dev.aai.rest", "create_task", title="traced"))
        assert "traced" in text_of(created)
        assert "### echo" in text_of(await session.call_tool("app_mcp_hostile", {}))

    wait_until(lambda: len(receiver.calls()) >= 6, 20, "the calls' spans")
    assert (ran(receiver, "mcp"), ran(receiver, "dbus"), ran(receiver, "restapi")) == (4, 1, 1)
    assert {s.attributes["aai.outcome"] for s in receiver.calls()} == {"ok"}


def test_the_call_command_runs_an_mcp_servers_tool_with_telemetry_on(tmp_path: Path) -> None:
    home = tmp_path / "home"
    install(home / ".aai", descriptor("mcp.hostile", hostile(tmp_path / "plan.json", {})))
    env = clean(dict(os.environ)) | FAST | {"HOME": str(home), "OTEL_TRACES_EXPORTER": "console"}
    command = [gateway_command(), "call", "mcp.hostile", "echo", '{"x": 1}']
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(json.loads(done.stdout)["content"][0]["text"]) == {"x": 1}
    assert '"name": "execute mcp"' in done.stderr, "the console exporter printed the executor's span"


async def test_com_and_osascript_run_and_are_traced(receiver: Receiver, tmp_path: Path) -> None:  # noqa: F811
    windows = tmp_path / "windows"
    install(windows / ".aai", ENVELOPE, config={"consent": {"default": "allow"}})
    env = clean(dict(os.environ)) | FAST | {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
    com_env = env | {"HOME": str(windows), "AAI_PLATFORM": "windows", "PYTHONPATH": str(STANDIN)}
    com_env["AAI_COM_LOG"] = str(tmp_path / "com.jsonl")
    async with stdio_session(com_env, tmp_path / "com.log") as session:
        added = await session.call_tool("aai_exec", exec_args("com.example.envelope", "add", text="milk"))
        assert json.loads(text_of(added)) == {"tool": "add", "params": {"text": "milk"}}

    macos = tmp_path / "macos"
    reminders = descriptor("com.example.reminders", {"type": "apple-events", "bundleId": "com.apple.reminders"})
    reminders["platform"] = "macos"
    reminders["tools"] = [{"name": "create_reminder", "description": "Create one", "parameters": {"type": "object"}}]
    install(macos / ".aai", reminders, config={"consent": {"default": "allow"}})
    mac_env = env | {"HOME": str(macos), "AAI_PLATFORM": "macos", "AAI_OSASCRIPT_MODE": "envelope"}
    mac_env |= {"PATH": f"{ROOT / 'tests' / 'standins'}{os.pathsep}{os.environ['PATH']}"}
    mac_env["AAI_OSASCRIPT_LOG"] = str(tmp_path / "osascript.jsonl")
    async with stdio_session(mac_env, tmp_path / "macos.log") as session:
        made = await session.call_tool("aai_exec", exec_args("com.example.reminders", "create_reminder", title="x"))
        assert json.loads(text_of(made))["bundle"] == "com.apple.reminders"

    wait_until(lambda: len(receiver.calls()) >= 2, 20, "the calls' spans")
    assert (ran(receiver, "com-ipc"), ran(receiver, "apple-events")) == (1, 1)

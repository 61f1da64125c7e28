"""MCP servers from npm and PyPI served as apps by the installed gateway, driven by the SDK's client."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from html import unescape
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext

from aai_gateway.web import UI_PATH
from tests.e2e.mcp_client import Inbox, error_of, stdio_session, text_of
from tests.mcpservers.servers import GIT_SERVER, alive, descriptor, install, marked, node, server_js, stdio
from tests.support import ROOT, TEST_APPS, Bus, gateway_command, install_descriptor, stop, until, wait_until
from tests.web.ui_support import make_ui

pytestmark = pytest.mark.anyio


def env_of(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"}


@asynccontextmanager
async def gateway(tmp_path: Path, *docs: dict[str, Any], **config: Any) -> AsyncIterator[ClientSession]:
    home = tmp_path / "home"
    install(home / ".aai", *docs, config={"consent": {"default": "allow"}, **config})
    async with stdio_session(env_of(home), tmp_path / "gateway.log") as session:
        yield session


async def exec_(
    session: ClientSession, app: str, tool: str, args: dict[str, Any] | None = None
) -> types.CallToolResult:
    return await session.call_tool("aai_exec", {"app": app, "tool": tool, "args": args or {}})


@asynccontextmanager
async def direct(name: str, *args: str) -> AsyncIterator[ClientSession]:
    """The same npm server, reached by the SDK's client without the gateway."""
    params = StdioServerParameters(command=node(), args=[server_js(name), *args])
    with Path(os.devnull).open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def shown(result: types.CallToolResult) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def test_one_entry_per_server_and_a_guide_from_its_own_tools(tmp_path: Path) -> None:
    memory = descriptor(
        "mcp.memory",
        stdio("memory", MEMORY_FILE_PATH=str(tmp_path / "memory.jsonl")),
        tools=[
            {"name": "read_graph", "description": "The whole graph, read only", "annotations": {"readOnlyHint": True}},
            {"name": "create_entities", "rename": "add_entities"},
            {"name": "delete_entities", "exclude": True},
        ],
    )
    async with gateway(tmp_path, memory) as session:
        listed = [tool.name for tool in (await session.list_tools()).tools]
        assert "app_mcp_memory" in listed
        assert not any("read_graph" in name or "entities" in name for name in listed)
        guide = text_of(await session.call_tool("app_mcp_memory", {}))
        assert "### add_entities" in guide
        assert "### create_entities" not in guide
        assert "delete_entities" not in guide
        assert "The whole graph, read only" in guide
        assert "### search_nodes" in guide  # the server's own tools, described by the server
        added = await exec_(
            session,
            "mcp.memory",
            "add_entities",
            {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}]},
        )
        assert not added.is_error, added
        graph = await exec_(session, "mcp.memory", "read_graph")
        assert "Ada" in text_of(graph)
        refused = await error_of(session, "aai_exec", {"app": "mcp.memory", "tool": "delete_entities", "args": {}})
        assert refused.data["type"] == "TOOL_NOT_FOUND"
        wrong = await error_of(session, "aai_exec", {"app": "mcp.memory", "tool": "add_entities", "args": {"x": 1}})
        assert wrong.data["type"] == "INVALID_PARAMS"
        assert "entities" in wrong.data["detail"]


async def test_content_blocks_come_back_as_the_server_sent_them(tmp_path: Path) -> None:
    everything = descriptor("mcp.everything", stdio("everything", "stdio"))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("get-tiny-image", {}),
        ("get-structured-content", {"location": "New York"}),
        ("get-resource-links", {"count": 2}),
        ("get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
        ("get-annotated-message", {"messageType": "error", "includeImage": True}),
        ("echo", {"message": "héllo"}),
    ]
    async with gateway(tmp_path, everything) as session, direct("everything", "stdio") as server:
        for tool, args in calls:
            through = shown(await exec_(session, "mcp.everything", tool, args))
            straight = shown(await server.call_tool(tool, args))
            assert through == straight, tool
        kinds = {block["type"] for tool, _ in calls for block in shown(await server.call_tool(tool, _))["content"]}
        assert {"text", "image", "resource_link", "resource"} <= kinds


async def test_a_python_server_from_pypi_on_a_repository_the_test_makes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "notes.txt").write_text("first\n")
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "Add the notes"], check=True)
    (repo / "notes.txt").write_text("second\n")
    app = descriptor("mcp.git", {"type": "mcp", "command": str(GIT_SERVER), "args": ["--repository", str(repo)]})
    async with gateway(tmp_path, app) as session:
        status = text_of(await exec_(session, "mcp.git", "git_status", {"repo_path": str(repo)}))
        assert "notes.txt" in status
        log = text_of(await exec_(session, "mcp.git", "git_log", {"repo_path": str(repo)}))
        assert "Add the notes" in log


async def test_filesystem_server_and_a_batch_across_servers_and_a_native_app(
    tmp_path: Path, bus: Bus, echo_app: None
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    files = descriptor("mcp.files", stdio("filesystem", str(shared)))
    memory = descriptor("mcp.memory", stdio("memory", MEMORY_FILE_PATH=str(tmp_path / "memory.jsonl")))
    home = tmp_path / "home"
    install(home / ".aai", files, memory)
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    env = {**env_of(home), "DBUS_SESSION_BUS_ADDRESS": bus.address}
    async with stdio_session(env, tmp_path / "gateway.log") as session:
        target = str(shared / "a.txt")
        written = await exec_(session, "mcp.files", "write_file", {"path": target, "content": "from the gateway"})
        assert not written.is_error, written
        assert (shared / "a.txt").read_text() == "from the gateway"
        calls = [
            {"app": "mcp.files", "tool": "read_text_file", "args": {"path": target}},
            {"app": "mcp.memory", "tool": "read_graph", "args": {}},
            {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "native"}},
            {"app": "mcp.files", "tool": "read_text_file", "args": {"path": "/etc/passwd"}},
        ]
        report = (await session.call_tool("aai_batch", {"calls": calls})).structured_content
        assert report is not None
        first, second, native, outside = report["results"]
        assert first["status"] == "ok"
        assert first["result"]["content"][0]["text"] == "from the gateway"
        assert second["status"] == "ok"
        assert native["status"] == "ok"
        assert "native" in json.dumps(native["result"])
        assert outside["status"] == "ok"  # the server's own refusal, an isError result passed on
        assert outside["result"]["isError"] is True


async def test_consent_per_tool_uses_the_servers_annotations(tmp_path: Path) -> None:
    memory = descriptor("mcp.memory", stdio("memory", MEMORY_FILE_PATH=str(tmp_path / "memory.jsonl")))
    home = tmp_path / "home"
    install(home / ".aai", memory, config={"consent": {"default": "ask", "readOnly": "allow"}})
    async with stdio_session(env_of(home), tmp_path / "gateway.log", consent=None) as session:
        read = await exec_(session, "mcp.memory", "read_graph")  # readOnlyHint from the server itself
        assert not read.is_error, read
        asked = await error_of(
            session, "aai_exec", {"app": "mcp.memory", "tool": "create_entities", "args": {"entities": []}}
        )
        assert asked.data["type"] == "CONSENT_REQUIRED"
        assert "create_entities" in asked.data["detail"]
    history = subprocess.run(
        [gateway_command(), "history", "--json", "--app", "mcp.memory"],
        env=env_of(home),
        capture_output=True,
        text=True,
        check=False,
    )
    assert history.returncode == 0, history.stderr
    tools = {record["tool"] for record in json.loads(history.stdout)}
    assert {"read_graph", "create_entities"} <= tools


async def test_a_hung_call_a_hung_server_and_a_noisy_one(tmp_path: Path) -> None:
    slow = descriptor("mcp.slow", stdio("everything", "stdio"))
    hung = descriptor("mcp.hung", {"type": "mcp", "command": node(), "args": ["-e", "setInterval(() => {}, 1000)"]})
    noisy = descriptor(
        "mcp.noisy",
        {
            "type": "mcp",
            "command": "sh",
            "args": ["-c", f"echo 'not json at all'; echo '{{\"half\": '; exec '{node()}' '{server_js('memory')}'"],
            "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
        },
    )
    apps = {"mcp.slow": {"timeout": 3}, "mcp.hung": {"timeout": 2}}
    async with gateway(tmp_path, slow, hung, noisy, apps=apps) as session:
        started = time.monotonic()
        late = await error_of(
            session, "aai_exec", {"app": "mcp.slow", "tool": "trigger-long-running-operation", "args": {"duration": 30}}
        )
        assert late.data["type"] == "TIMEOUT"
        assert time.monotonic() - started < 6
        started = time.monotonic()
        silent = await error_of(session, "app_mcp_hung", {})
        assert silent.data["type"] == "TIMEOUT", silent
        assert time.monotonic() - started < 5
        graph = await exec_(session, "mcp.noisy", "read_graph")
        assert not graph.is_error, graph
        echoed = await exec_(session, "mcp.slow", "echo", {"message": "still here"})
        assert "still here" in text_of(echoed)


async def test_a_server_killed_mid_call_is_started_again(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    app = descriptor("mcp.everything", stdio("everything", "stdio", mark=mark))
    async with gateway(tmp_path, app) as session:
        assert "one" in text_of(await exec_(session, "mcp.everything", "echo", {"message": "one"}))
        (first,) = marked(mark)
        outcome: dict[str, Any] = {}

        async def long_call() -> None:
            args = {"app": "mcp.everything", "tool": "trigger-long-running-operation", "args": {"duration": 20}}
            outcome["error"] = await error_of(session, "aai_exec", args)

        started = time.monotonic()
        async with anyio.create_task_group() as group:
            group.start_soon(long_call)
            await anyio.sleep(1)
            os.kill(first, signal.SIGKILL)
        assert outcome["error"].data["type"] == "APP_NOT_RUNNING", outcome
        assert time.monotonic() - started < 10
        assert "two" in text_of(await exec_(session, "mcp.everything", "echo", {"message": "two"}))
        (second,) = marked(mark)
        assert second != first


def _gateway_pid(home: Path) -> int:
    needle = f"HOME={home}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (
                    needle in (entry / "environ").read_bytes().split(b"\0")
                    and b"aai-gateway" in (entry / "cmdline").read_bytes()
                ):
                    return int(entry.name)
            except OSError:
                continue
    raise AssertionError("no gateway process found")


@pytest.mark.parametrize("ending", ["stdin closed", "SIGTERM"])
async def test_no_server_outlives_the_gateway(tmp_path: Path, ending: str) -> None:
    mark = uuid.uuid4().hex
    everything = descriptor("mcp.everything", stdio("everything", "stdio", mark=mark))
    memory = descriptor("mcp.memory", stdio("memory", mark=mark, MEMORY_FILE_PATH=str(tmp_path / "m.jsonl")))
    home = tmp_path / "home"
    pids: list[int] = []
    async with gateway(tmp_path, everything, memory) as session:
        await exec_(session, "mcp.everything", "echo", {"message": "up"})
        await exec_(session, "mcp.memory", "read_graph")
        pids = marked(mark)
        assert len(pids) == 2
        if ending == "SIGTERM":
            os.kill(_gateway_pid(home), signal.SIGTERM)
            deadline = time.monotonic() + 5
            while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            assert not any(alive(pid) for pid in pids)
    deadline = time.monotonic() + 8
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    assert not [pid for pid in pids if alive(pid)]


async def test_removing_a_servers_descriptor_stops_the_server(tmp_path: Path) -> None:
    """The app is gone after the rescan the file watcher makes, and its server with it; the other keeps running."""
    mark, other = uuid.uuid4().hex, uuid.uuid4().hex
    memory = descriptor("mcp.memory", stdio("memory", mark=mark, MEMORY_FILE_PATH=str(tmp_path / "m.jsonl")))
    everything = descriptor("mcp.everything", stdio("everything", "stdio", mark=other))
    async with gateway(tmp_path, memory, everything) as session:
        await exec_(session, "mcp.memory", "read_graph")
        await exec_(session, "mcp.everything", "echo", {"message": "up"})
        (pid,) = marked(mark)
        (kept,) = marked(other)
        (tmp_path / "home" / ".aai" / "mcp.memory" / "aai.json").unlink()
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        assert not alive(pid)
        assert alive(kept)
        echoed = await exec_(session, "mcp.everything", "echo", {"message": "still"})
        assert not echoed.is_error


async def test_idle_servers_stop_and_start_again_on_use(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    app = descriptor("mcp.memory", stdio("memory", mark=mark, MEMORY_FILE_PATH=str(tmp_path / "m.jsonl")))
    async with gateway(tmp_path, app, mcpIdleSeconds=1) as session:
        await exec_(session, "mcp.memory", "read_graph")
        (pid,) = marked(mark)
        deadline = time.monotonic() + 6
        while alive(pid) and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        assert not alive(pid)
        graph = await exec_(session, "mcp.memory", "read_graph")
        assert not graph.is_error


async def test_list_changed_of_a_server_reaches_our_clients(tmp_path: Path) -> None:
    """server-everything adds its tools that need client capabilities after the handshake and says so."""
    app = descriptor("mcp.everything", stdio("everything", "stdio"))
    inbox = Inbox()
    home = tmp_path / "home"
    install(home / ".aai", app)
    async with stdio_session(env_of(home), tmp_path / "gateway.log", inbox=inbox) as session:
        await session.call_tool("app_mcp_everything", {})
        await inbox.wait_for("notifications/tools/list_changed", timeout=10)
        await anyio.sleep(1)  # the server says it several times as it starts: our clients are told once
        assert inbox.methods.count("notifications/tools/list_changed") == 1, inbox.methods


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _http_everything(port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [node(), server_js("everything"), "streamableHttp"],
            env={**os.environ, "PORT": str(port)},
            stdout=out,
            stderr=out,
        )

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
        except OSError:
            return False
        return True

    wait_until(listening, 20, "server-everything to listen")
    return proc


async def test_a_streamable_http_server_and_its_forgotten_session(tmp_path: Path) -> None:
    port = _free_port()
    app = descriptor("mcp.remote", {"type": "mcp", "url": f"http://127.0.0.1:{port}/mcp"})
    async with gateway(tmp_path, app) as session:
        unreachable = await error_of(session, "aai_exec", {"app": "mcp.remote", "tool": "echo", "args": {}})
        assert unreachable.data["type"] == "APP_NOT_RUNNING"
        assert "could not be reached" in unreachable.data["detail"]
        server = _http_everything(port, tmp_path / "everything.log")
        try:
            image = shown(await exec_(session, "mcp.remote", "get-tiny-image"))
            assert [block["type"] for block in image["content"]] == ["text", "image", "text"]
            assert image["content"][1]["mimeType"] == "image/png"
        finally:
            stop(server)
        server = _http_everything(port, tmp_path / "everything.log")  # a new process knows no session of ours
        try:
            again = await exec_(session, "mcp.remote", "echo", {"message": "new session"})
            assert "new session" in text_of(again)
        finally:
            stop(server)


async def _answer_form(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    assert isinstance(params, types.ElicitRequestFormParams), params
    assert "name" in params.requested_schema["properties"]
    return types.ElicitResult(action="accept", content={"name": "Ada Lovelace"})


async def _sample(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult | types.ErrorData:
    asked = params.messages[0].content
    assert isinstance(asked, types.TextContent)
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=f"sampled: {asked.text}"), model="test-model"
    )


@asynccontextmanager
async def _client(home: Path, log: Path, *, capable: bool) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=gateway_command(), args=["--mcp"], env=env_of(home))
    with log.open("a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(
                read,
                write,
                elicitation_callback=_answer_form if capable else None,
                sampling_callback=_sample if capable else None,
            ) as session,
        ):
            await session.initialize()
            yield session


async def test_progress_elicitation_and_sampling_reach_our_client(tmp_path: Path) -> None:
    home = tmp_path / "home"
    install(home / ".aai", descriptor("mcp.everything", stdio("everything", "stdio")))
    async with _client(home, tmp_path / "gateway.log", capable=True) as session:
        steps: list[tuple[float, float | None]] = []

        async def progressed(progress: float, total: float | None, message: str | None) -> None:
            steps.append((progress, total))

        args = {"app": "mcp.everything", "tool": "trigger-long-running-operation", "args": {"duration": 1, "steps": 3}}
        done = await session.call_tool("aai_exec", args, progress_callback=progressed)
        assert not done.is_error, done
        assert len(steps) > 0, "no progress reached the client"
        progress, total = steps[-1]
        assert progress == total == 3, steps
        asked = await exec_(session, "mcp.everything", "trigger-elicitation-request")
        assert "Name: Ada Lovelace" in json.dumps(shown(asked)), asked
        sampled = await exec_(session, "mcp.everything", "trigger-sampling-request", {"prompt": "a haiku"})
        assert "sampled: " in json.dumps(shown(sampled)), sampled
        assert "a haiku" in json.dumps(shown(sampled)), sampled
    async with _client(home, tmp_path / "gateway.log", capable=False) as session:
        refused = shown(await exec_(session, "mcp.everything", "trigger-sampling-request", {"prompt": "x"}))
        assert "does not take sampling requests" in json.dumps(refused), refused


def test_the_ui_shows_a_servers_tools_state_and_crash(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    with contextlib.contextmanager(make_ui)(tmp_path / "ui") as ui:
        app = descriptor("mcp.memory", stdio("memory", mark=mark, MEMORY_FILE_PATH=str(tmp_path / "m.jsonl")))
        install(ui.gateway.settings.scan_paths[0], app, config={})
        assert "mcp.memory" in ui.gateway.rescan()
        ui.login()
        page = unescape(ui.client.get(f"{UI_PATH}/apps/mcp.memory").text)
        assert "<code>read_graph</code>" in page  # the server's own tools, listed from the server
        (pid,) = marked(mark)
        apps = unescape(ui.client.get(f"{UI_PATH}/apps").text)
        assert f"stdio server running (pid {pid}), 9 tools" in apps
        os.kill(pid, signal.SIGKILL)

        def crash_shown() -> bool:
            return "last failure: was killed by signal 9" in unescape(ui.client.get(f"{UI_PATH}/apps").text)

        wait_until(crash_shown, 10, "the crash on the Apps page")
        assert ui.client.portal is not None
        ui.client.portal.call(ui.gateway.aclose)


async def test_a_servers_error_and_cancelled_calls(tmp_path: Path) -> None:
    cancelled = tmp_path / "cancelled"
    execution = {
        "type": "mcp",
        "command": sys.executable,
        "args": ["-m", "tests.mcpservers.sdk_server", str(cancelled)],
        "cwd": str(ROOT),
    }
    async with gateway(tmp_path, descriptor("mcp.ledger", execution), apps={"mcp.ledger": {"timeout": 2}}) as session:
        refused = await error_of(session, "aai_exec", {"app": "mcp.ledger", "tool": "refuse", "args": {}})
        assert refused.data["type"] == "AUTOMATION_FAILED"
        assert "the ledger is locked by another user" in refused.data["detail"]
        with anyio.move_on_after(1):  # our client gives up: the gateway cancels, and so does the server
            await exec_(session, "mcp.ledger", "wait", {"seconds": 30})
        await until(cancelled.exists, 5, "the server to see the client's cancel")
        cancelled.unlink()
        late = await error_of(session, "aai_exec", {"app": "mcp.ledger", "tool": "wait", "args": {"seconds": 30}})
        assert late.data["type"] == "TIMEOUT"
        await until(cancelled.exists, 5, "the server to see the call cancelled")
        assert "waited" in text_of(await exec_(session, "mcp.ledger", "wait", {"seconds": 0}))
        assert text_of(await exec_(session, "mcp.ledger", "sign", {"code": "493817"})) == "signed"
    history = subprocess.run(
        [gateway_command(), "history", "--json", "--tool", "sign"],
        env=env_of(tmp_path / "home"),
        capture_output=True,
        text=True,
        check=True,
    )
    (record,) = json.loads(history.stdout)
    assert record["args"] == {"code": "[redacted]"}  # the server's schema says it is a password
    assert "493817" not in history.stdout

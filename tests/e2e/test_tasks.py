"""Long waits and plan runs as MCP tasks (`io.modelcontextprotocol/tasks`, SEP-2663) for clients of the
2026-07-28 revision that declare the extension: the official SDK client, its extension interface carrying
the declaration and claiming the `resultType: "task"` answer, against the installed `aai-gateway` over
stdio and over HTTP (`--web`). The waits are on the DBus signal service of tests/e2e/test_events.py."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from dbus_fast.aio import MessageBus
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.session import ElicitationFnT

from tests.e2e.mcp_client import Consenter, stdio_session, text_of, web_gateway
from tests.e2e.tasks_client import (
    MODERN,
    STALL,
    TASKS,
    Tasks,
    cancel,
    cancelled_midway,
    ended,
    plan,
    started,
    task_call,
    two_servers,
    until,
)
from tests.e2e.test_events import APP, emitter, home_with_storm, tick  # noqa: F401 (the emitter fixture)
from tests.search.test_input_required import subprocess_history
from tests.support import Bus, gateway_command

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

WAIT = {"app": APP, "event": "tick", "timeout": 600}


@asynccontextmanager
async def modern_stdio(
    env: dict[str, str], log: Path, tasks: Tasks | None, consent: ElicitationFnT | None = None, name: str = "tasker"
) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=gateway_command(), args=["--mcp"], env={"PATH": os.environ["PATH"], **env})
    with log.open("a") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog),
            mode=MODERN,
            client_info=types.Implementation(name=name, version="1"),
            elicitation_callback=consent,
            extensions=[tasks] if tasks is not None else None,
        ) as client:
            yield client


def modern_http(url: str, tasks: Tasks | None, name: str = "tasker") -> Client:
    return Client(
        url,
        mode=MODERN,
        client_info=types.Implementation(name=name, version="1"),
        extensions=[tasks] if tasks is not None else None,
    )


async def seen(log: Path, text: str, after: int = 0) -> None:
    """Until the gateway's log says `text` (past its first `after` characters)."""
    with anyio.fail_after(30):
        while text not in log.read_text()[after:]:
            await anyio.sleep(0.05)


def allowing(env: dict[str, str]) -> dict[str, str]:
    (Path(env["HOME"]) / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}}))
    return env


def history(tmp_path: Path, app: str | None = None) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(subprocess_history(tmp_path))
    return [r for r in records if app is None or r["app"] == app]


async def a_wait_ends_with_a_later_event(client: Client, tasks: Tasks, signals: MessageBus, log: Path) -> None:
    """A wait answered as a task, the event sent once it listens: polling the task gives the event."""
    answers: list[types.CallToolResult] = []
    listened = len(log.read_text())
    async with anyio.create_task_group() as group:

        async def wait() -> None:
            answers.append(await client.call_tool("aai_wait", WAIT))

        group.start_soon(wait)
        await seen(log, "listening for tick", listened)
        await tick(signals, 7, "later")
    [task] = tasks.created
    assert (task.status, task.ttl_ms is not None, task.poll_interval_ms is not None) == ("working", True, True)
    assert answers[0].structured_content is not None
    assert answers[0].structured_content["payload"] == {"n": 7, "text": "later"}, answers[0]


async def test_a_wait_as_a_task_ends_with_the_event_and_is_asked_and_recorded_as_before(
    bus: Bus,
    emitter: MessageBus,  # noqa: F811
    tmp_path: Path,
) -> None:
    env, log = home_with_storm(bus, tmp_path), tmp_path / "gateway.log"
    user, tasks = Consenter("app"), Tasks()
    async with modern_stdio(env, log, tasks, consent=user) as client:
        await a_wait_ends_with_a_later_event(client, tasks, emitter, log)
    assert len(user.messages) == 1, user.messages  # asked in a round, before the task began
    assert "(wait) tick" in user.messages[0]
    records = history(tmp_path, APP)
    assert [(r["tool"], r["status"], r["caller"]) for r in records] == [("(wait) tick", "ok", "tasker")], records


async def test_a_wait_as_a_task_over_http(bus: Bus, emitter: MessageBus, tmp_path: Path) -> None:  # noqa: F811
    env, log = allowing(home_with_storm(bus, tmp_path)), tmp_path / "gateway.log"
    with web_gateway({"PATH": os.environ["PATH"], **env}, log) as url:
        tasks = Tasks()
        async with modern_http(url, tasks) as client:
            discovered = await client.session.send_discover(MODERN)
            assert discovered["capabilities"]["extensions"] == {TASKS: {}}, discovered
            await a_wait_ends_with_a_later_event(client, tasks, emitter, log)


async def test_a_cancelled_waiting_task_stops_listening(
    bus: Bus,
    emitter: MessageBus,  # noqa: F811
    tmp_path: Path,
) -> None:
    env, log = allowing(home_with_storm(bus, tmp_path)), tmp_path / "gateway.log"
    async with modern_stdio(env, log, Tasks()) as client:
        task = await started(client.session, "aai_wait", WAIT)
        await seen(log, "listening for tick")
        acked = await cancel(client.session, task.task_id)
        assert acked.result_type == "complete"
        state = await ended(client.session, task.task_id)
        assert (state.status, state.result, state.error) == ("cancelled", None, None), state
        await seen(log, "stopped listening for tick")
        again = await cancel(client.session, task.task_id)  # ended: nothing more to stop
        assert again.result_type == "complete"
    [record] = history(tmp_path, APP)
    assert (record["tool"], record["status"], record["error"]["type"]) == ("(wait) tick", "error", "CANCELLED")


async def test_a_run_as_a_task_and_a_cancelled_one_rolled_back(tmp_path: Path) -> None:
    files = two_servers(tmp_path)
    env, log = {"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux"}, tmp_path / "gateway.log"
    tasks = Tasks()
    async with modern_stdio(env, log, tasks) as client:
        done = await client.call_tool("aai_run", plan())
        assert not done.is_error, done
        assert done.structured_content is not None
        assert done.structured_content["status"] == "ok", done.structured_content
        assert len(tasks.created) == 1
        assert files["a"].exists()
        assert not files["undo_a"].exists()

        files["a"].unlink()
        task = await started(client.session, "aai_run", plan(STALL))
        await until(files["a"], files["stall"])
        assert (await task_call(client.session, "tasks/get", task.task_id)).status == "working"
        await cancel(client.session, task.task_id)
        state = await ended(client.session, task.task_id)
        assert state.status == "cancelled", state
        assert files["undo_a"].exists(), "the cancelled run's done step was not undone"
    runs = [r for r in history(tmp_path) if r["tool"] == "plan"]
    assert sorted((r["status"], (r.get("error") or {}).get("type")) for r in runs) == [
        ("error", "CANCELLED"),
        ("ok", None),
    ], runs


@pytest.mark.hostile("validation")
async def test_unknown_foreign_and_undeclared_task_ids_are_refused(
    bus: Bus,
    emitter: MessageBus,  # noqa: F811
    tmp_path: Path,
) -> None:
    env, log = allowing(home_with_storm(bus, tmp_path)), tmp_path / "gateway.log"
    with web_gateway({"PATH": os.environ["PATH"], **env}, log) as url:
        async with modern_http(url, Tasks(), name="owner") as owner, modern_http(url, Tasks(), name="other") as other:
            task = await started(owner.session, "aai_wait", WAIT)
            hostile_ids = [task.task_id, "no-such-task", "x" * 100_000, 'a"\n\u202e' + task.task_id]
            for method in ("tasks/get", "tasks/cancel"):
                for task_id in hostile_ids:
                    with pytest.raises(MCPError) as refused:
                        await task_call(other.session, method, task_id)
                    assert refused.value.error.code == types.INVALID_PARAMS, refused.value.error
                    message = refused.value.error.message
                    assert "no task" in message, message
                    assert "of this client" in message, message
                    assert len(message) < 300, message
                    assert "\n" not in message, message
            assert (await task_call(owner.session, "tasks/get", task.task_id)).status == "working"
            async with modern_http(url, None, name="owner") as undeclared:
                with pytest.raises(MCPError) as missing:
                    await task_call(undeclared.session, "tasks/get", task.task_id)
                assert missing.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY, missing.value.error
            with pytest.raises(MCPError) as gone:  # the extension of 2026-07-28 has no tasks/result
                await task_call(owner.session, "tasks/result", task.task_id)
            assert gone.value.error.code == types.METHOD_NOT_FOUND
            for header in ("another-task", None):  # SEP-2663: Mcp-Name routes tasks/*, and must be the id
                answer = await raw_task_get(url, task.task_id, header)
                assert answer["error"]["code"] == types.HEADER_MISMATCH, answer
            await cancel(owner.session, task.task_id)
            assert (await ended(owner.session, task.task_id)).status == "cancelled"


async def raw_task_get(url: str, task_id: str, name_header: str | None) -> dict[str, Any]:
    """`tasks/get` as the owner would send it, but with `Mcp-Name` set to `name_header` (or left out)."""
    meta = {
        types.PROTOCOL_VERSION_META_KEY: MODERN,
        types.CLIENT_CAPABILITIES_META_KEY: {"extensions": {TASKS: {}}},
        types.CLIENT_INFO_META_KEY: {"name": "owner", "version": "1"},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tasks/get",
    }
    if name_header is not None:
        headers["Mcp-Name"] = name_header
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": task_id, "_meta": meta}}
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(url, json=body, headers=headers)
    answer: dict[str, Any] = response.json()
    return answer


async def test_clients_without_the_extension_get_the_result(tmp_path: Path) -> None:
    files = two_servers(tmp_path)
    env, log = {"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux"}, tmp_path / "gateway.log"
    async with modern_stdio(env, log, None) as client:
        discovered = await client.session.send_discover(MODERN)
        assert discovered["capabilities"]["extensions"] == {TASKS: {}}, discovered
        result = await client.session.call_tool("aai_run", plan(), allow_claimed=True)
        assert isinstance(result, types.CallToolResult), result
        assert result.structured_content is not None
        assert result.structured_content["status"] == "ok"
        with pytest.raises(MCPError) as missing:
            await task_call(client.session, "tasks/get", "any")
        assert missing.value.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    files["a"].unlink()
    async with stdio_session({"PATH": os.environ["PATH"], **env}, log) as session:  # the 2025-11-25 era
        result = await session.call_tool("aai_run", plan())
        assert not result.is_error, text_of(result)
        assert files["a"].exists()
        with pytest.raises(MCPError) as unknown:
            await task_call(session, "tasks/get", "any")
        assert unknown.value.error.code == types.METHOD_NOT_FOUND


async def test_a_plain_run_cancelled_by_its_client_is_rolled_back(tmp_path: Path) -> None:
    """The 2025-11-25 era's `notifications/cancelled` stops a run as a task's cancel does: undone."""
    files = two_servers(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux", "PATH": os.environ["PATH"]}
    async with stdio_session(env, tmp_path / "gateway.log") as session:
        await session.call_tool("aai_run", plan())  # the servers started, and the fast path taken
        files["a"].unlink()
        await cancelled_midway(session.call_tool, files)
        assert not text_of(await session.call_tool("aai_run", plan())).startswith("The plan failed")


async def test_a_run_cancelled_through_the_sdk_is_rolled_back(tmp_path: Path) -> None:
    """The same over the SDK's own request handling (a 2026-07-28 client without the tasks extension)."""
    files = two_servers(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux"}
    async with modern_stdio(env, tmp_path / "gateway.log", None) as client:
        await cancelled_midway(client.call_tool, files)

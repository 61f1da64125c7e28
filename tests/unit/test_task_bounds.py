"""The bounds of MCP tasks, with the limits made small: a client's cap on running tasks, ended tasks making
room, and a task dropped (its work stopped) once its time to live is over. The SDK's client in the
2026-07-28 era, declaring the tasks extension, against a `GatewayServer` in this process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError

from aai_gateway.config import load_settings
from aai_gateway.mcp import tasks
from aai_gateway.mcp.server import GatewayServer
from aai_gateway.service import Gateway
from tests.e2e.tasks_client import MODERN, STALL, Tasks, cancel, ended, plan, started, task_call, two_servers, until

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    two_servers(tmp_path)
    gateway = Gateway(load_settings({"HOME": str(tmp_path / "home"), "AAI_PLATFORM": "linux"}))
    try:
        served = GatewayServer(gateway)
        async with Client(served.server, mode=MODERN, extensions=[Tasks()]) as connected:
            yield connected
    finally:
        await gateway.aclose()


STALLED = plan(STALL)


@pytest.mark.hostile("limits")
async def test_a_client_runs_at_most_its_cap_of_tasks(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks, "MOST_PER_CLIENT", 2)
    first = await started(client.session, "aai_run", STALLED)
    second = await started(client.session, "aai_run", STALLED)
    refused = await client.session.call_tool("aai_run", STALLED)
    assert refused.is_error
    assert isinstance(refused.content[0], types.TextContent)
    assert "2 tasks of this client are running, the most at once" in refused.content[0].text
    await cancel(client.session, first.task_id)
    assert (await ended(client.session, first.task_id)).status == "cancelled"
    third = await started(client.session, "aai_run", STALLED)  # the ended task made room, and is gone
    with pytest.raises(MCPError) as gone:
        await task_call(client.session, "tasks/get", first.task_id)
    assert gone.value.error.code == types.INVALID_PARAMS
    for running in (second, third):  # rather than leave the stalled runs to the gateway's closing
        await cancel(client.session, running.task_id)
        await ended(client.session, running.task_id)


async def test_a_task_past_its_time_to_live_is_dropped_and_its_work_stopped(
    client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tasks, "TTL", 0.5)
    task = await started(client.session, "aai_run", STALLED)
    assert task.ttl_ms == 500
    await anyio.sleep(1.0)  # past the time to live
    with pytest.raises(MCPError) as gone:
        await task_call(client.session, "tasks/get", task.task_id)
    assert "no task" in gone.value.error.message, gone.value.error
    await until(tmp_path / "undo_a")  # the stopped run was rolled back

"""The client's side of the MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663), which the SDK
client has no API for: its extension interface declares the extension and claims the `resultType: "task"`
answer, and `tasks/*` requests go through the session's generic `send_request`. Also the two MCP servers
the plan runs of the tasks tests call."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import anyio
import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession

from tests.mcpservers.servers import descriptor, hostile, install

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
ENDED = ("completed", "failed", "cancelled")


class CreatedTask(types.Result):
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    status_message: str | None = None


class TaskState(types.Result):
    result_type: str = "complete"
    task_id: str
    status: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskId(types.RequestParams):
    task_id: str


class TaskRequest(types.Request[TaskId, str]):
    method: str
    params: TaskId
    name_param: ClassVar[str | None] = "taskId"


async def task_call(session: ClientSession, method: str, task_id: str) -> TaskState:
    return await session.send_request(TaskRequest(method=method, params=TaskId(task_id=task_id)), TaskState)


async def cancel(session: ClientSession, task_id: str) -> types.EmptyResult:
    request = TaskRequest(method="tasks/cancel", params=TaskId(task_id=task_id))
    return await session.send_request(request, types.EmptyResult)


async def ended(session: ClientSession, task_id: str) -> TaskState:
    """The task's state once it ended (polled, within a minute)."""
    with anyio.fail_after(60):
        while (state := await task_call(session, "tasks/get", task_id)).status not in ENDED:
            assert state.status == "working", state
            await anyio.sleep(0.1)
    return state


async def started(session: ClientSession, tool: str, arguments: dict[str, Any]) -> CreatedTask:
    """A call answered at once with a task (not after the minutes its work takes)."""
    with anyio.fail_after(30):
        task = await session.call_tool(tool, arguments, allow_claimed=True)
    assert isinstance(task, CreatedTask), task
    return task


class Tasks(ClientExtension):
    """The tasks extension as a client uses it: a task answer is polled to its end; `created` keeps the ids."""

    identifier = TASKS

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, task: CreatedTask, context: ClaimContext) -> types.CallToolResult:
        self.created.append(task)
        state = await ended(context.session, task.task_id)
        assert state.status == "completed", state
        return types.CallToolResult.model_validate(state.result)


def two_servers(tmp_path: Path) -> dict[str, Path]:
    """`mcp.quick` (tools `a`, and `undo_a` putting back what it did, each touching a file) and `mcp.slow`
    (`stall`, which never answers); the files by name."""
    files = {name: tmp_path / name for name in ("a", "undo_a", "stall")}
    quick = {
        "tools": [{"name": n, "inputSchema": {"type": "object"}} for n in ("a", "undo_a")],
        "calls": {n: [{"touch": str(files[n])}, {"echo": True}] for n in ("a", "undo_a")},
    }
    slow = {
        "tools": [{"name": "stall", "inputSchema": {"type": "object"}}],
        "calls": {"stall": [{"touch": str(files["stall"])}, {"hang": True}]},
    }
    install(
        tmp_path / "home" / ".aai",
        descriptor("mcp.quick", hostile(tmp_path / "quick.json", quick)),
        descriptor("mcp.slow", hostile(tmp_path / "slow.json", slow)),
    )
    return files


def plan(*steps: dict[str, Any]) -> dict[str, Any]:
    undo = {"app": "mcp.quick", "tool": "undo_a", "args": {}}
    first = {"id": "first", "app": "mcp.quick", "tool": "a", "args": {}, "undo": undo}
    return {"steps": [first, *steps], "onError": "rollback"}


STALL = {"id": "stalled", "app": "mcp.slow", "tool": "stall", "args": {}}
"""A step of `two_servers` that never ends."""


async def until(*paths: Path) -> None:
    """Until every one of `paths` exists (within half a minute)."""
    with anyio.fail_after(30):
        while not all(path.exists() for path in paths):
            await anyio.sleep(0.05)


async def cancelled_midway(call_tool: Callable[..., Coroutine[Any, Any, Any]], files: dict[str, Path]) -> None:
    """A plan that stalls run with `call_tool`, cancelled once its first step is done; its undo then runs."""
    async with anyio.create_task_group() as group:
        group.start_soon(call_tool, "aai_run", plan(STALL))
        await until(files["a"], files["stall"])
        group.cancel_scope.cancel()
    await until(files["undo_a"])

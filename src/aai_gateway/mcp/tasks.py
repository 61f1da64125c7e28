"""Long waits and plan runs as MCP tasks: the `io.modelcontextprotocol/tasks` extension (SEP-2663).

A client of the 2026-07-28 revision that declares the extension in a request's capabilities may get, for
a call of `aai_wait` or `aai_run`, a task instead of the result: the call is answered once its questions
are settled (consent rounds still end in input-required results first) and its work has begun, which goes
on in the background. `tasks/get` tells the task's status and, once it ended, the tool result the call
would have answered (or the JSON-RPC error it would have raised); `tasks/cancel` stops the work as a
cancelled call stops (a plan's rollback included); `tasks/update` is acknowledged, as no task here waits
for input. The extension has no `tasks/result` and no `tasks/list`: the SDK answers them METHOD_NOT_FOUND.

A task belongs to the client that started it (its transport, session if any, and declared name); to any
other, as to an unknown or expired id, it does not exist. Ids are 192 random bits. Each client has at most
`MOST_PER_CLIENT` tasks (`MOST_TASKS` in all); a task is dropped `TTL` after it was created (its work
stopped, should it still run), and the oldest ended tasks make room for new ones.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import mcp_types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types.methods import serialize_server_result
from pydantic import ValidationError

from aai_gateway.errors import AutomationFailed, ConsentRequired
from aai_gateway.mcp.errors import answer, to_result
from aai_gateway.mcp.results import ToolResult, typed
from aai_gateway.mcp.rounds import modern
from aai_gateway.mcp.sdk_private import connection_of

log = logging.getLogger(__name__)

EXTENSION = "io.modelcontextprotocol/tasks"
LONG = frozenset({"wait", "run"})
"""The kinds of tool a call of which may become a task."""
TTL = 7200.0
"""Seconds a task is kept from its creation: the longest wait (an hour) and run, then an hour to read it."""
POLL = 2000
"""Milliseconds between polls the client is asked to keep to."""
MOST_PER_CLIENT = 32
MOST_TASKS = 256

Status = Literal["working", "completed", "failed", "cancelled"]
Owner = tuple[str, str, str]
Work = Callable[[Callable[[], None]], Awaitable[ToolResult | types.InputRequiredResult]]
"""A call's work, told how to say that it has begun; its answer as the plain call would have it."""


class TaskParams(types.RequestParams):
    task_id: str


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] | None = None


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Task:
    task_id: str
    owner: Owner
    tool: str
    job: asyncio.Future[ToolResult | types.InputRequiredResult]
    created: datetime = field(default_factory=_now)
    updated: datetime = field(default_factory=_now)
    status: Status = "working"
    message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    order: int = 0

    def wire(self) -> dict[str, Any]:
        """The task as `tasks/get` and `CreateTaskResult` carry it (without their `resultType`)."""
        shown: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": _stamp(self.created),
            "lastUpdatedAt": _stamp(self.updated),
            "ttlMs": int(TTL * 1000),
            "pollIntervalMs": POLL,
        }
        if self.message is not None:
            shown["statusMessage"] = self.message
        if self.status == "completed":
            shown["result"] = self.result
        elif self.status == "failed":
            shown["error"] = self.error
        return shown

    def expired(self, now: datetime) -> bool:
        return (now - self.created).total_seconds() >= TTL


class Tasks:
    """The tasks of every client of one gateway server, and the `tasks/*` methods serving them."""

    def __init__(self, server: Server[Any], transport: str) -> None:
        self.transport = transport
        self._tasks: dict[str, Task] = {}
        self._order = itertools.count()
        server.extensions[EXTENSION] = {}
        server.add_request_handler("tasks/get", TaskParams, self._get)
        server.add_request_handler("tasks/cancel", TaskParams, self._cancel)
        server.add_request_handler("tasks/update", UpdateParams, self._update)

    def wanted(self, ctx: ServerRequestContext[Any], kind: str) -> bool:
        """Whether a call of a tool of `kind` may become a task: a long one, of a client that declared tasks."""
        return kind in LONG and declared(ctx)

    async def start(
        self, ctx: ServerRequestContext[Any], tool: str, work: Work, style: str
    ) -> ToolResult | types.InputRequiredResult | dict[str, Any]:
        """`work` run in the background; its answer when it ends before it begins (a question, a refusal, a
        bad argument), else a new task, once it has begun."""
        owner = owner_of(ctx, self.transport)
        refusal = self._make_room(owner)
        if refusal is not None:
            return answer(AutomationFailed(f"{tool} was not started: {refusal}"), style)
        begun = asyncio.Event()
        job = asyncio.ensure_future(work(begun.set))
        cue = asyncio.ensure_future(begun.wait())
        try:
            await asyncio.wait({job, cue}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the call itself was cancelled before it became a task
            job.cancel()
            raise
        finally:
            cue.cancel()
        if job.done():
            return job.result()
        task = Task(secrets.token_urlsafe(24), owner, tool, job, order=next(self._order))
        task.message = f"{tool} is running"
        self._tasks[task.task_id] = task
        job.add_done_callback(lambda ended: self._ended(task, ended))
        log.info("%s runs as task %s", tool, task.task_id)
        return {"resultType": "task", **task.wire()}

    def _make_room(self, owner: Owner) -> str | None:
        """Drop expired tasks, and the oldest ended ones over the limits; why no task can start, if none can."""
        self._sweep()
        for limit, mine in ((MOST_PER_CLIENT, lambda t: t.owner == owner), (MOST_TASKS, lambda t: True)):
            tasks = [t for t in self._tasks.values() if mine(t)]
            ended = sorted((t for t in tasks if t.status != "working"), key=lambda t: t.order)
            for old in ended[: max(len(tasks) - limit + 1, 0)]:
                del self._tasks[old.task_id]
            if len(tasks) - len(ended) >= limit:
                whose = "of this client " if limit == MOST_PER_CLIENT else ""
                return (
                    f"{limit} tasks {whose}are running, the most at once; "
                    "cancel one (tasks/cancel) or wait for one to end"
                )
        return None

    def _sweep(self) -> None:
        now = _now()
        for task in [t for t in self._tasks.values() if t.expired(now)]:
            del self._tasks[task.task_id]
            if not task.job.done():
                log.info("task %s of %s expired while running: stopped", task.task_id, task.tool)
                task.job.cancel()

    def _ended(self, task: Task, job: asyncio.Future[ToolResult | types.InputRequiredResult]) -> None:
        task.updated = _now()
        if job.cancelled():
            task.status, task.message = "cancelled", f"{task.tool} was cancelled"
            return
        failure = job.exception()
        if failure is None:
            try:
                self._completed(task, job.result())
                return
            except ValidationError as exc:  # the result the call would have answered does not fit the protocol
                failure = exc
        if isinstance(failure, MCPError):
            error = failure.error
        else:
            log.error("task %s of %s failed", task.task_id, task.tool, exc_info=failure)
            said = f"{task.tool} failed in the gateway ({type(failure).__name__}); see its log"
            error = types.ErrorData(code=types.INTERNAL_ERROR, message=said)
        task.status, task.message = "failed", error.message
        task.error = error.model_dump(by_alias=True, mode="json", exclude_none=True)

    @staticmethod
    def _completed(task: Task, result: ToolResult | types.InputRequiredResult) -> None:
        if isinstance(result, types.InputRequiredResult):  # a question asked once the work ran
            result = to_result(
                ConsentRequired(
                    f"{task.tool} needed the user's answer while it ran as a task, where no question can be "
                    "put; call it again without the tasks extension, or approve what it uses first"
                )
            )
        task.result = serialize_server_result("tools/call", "2026-07-28", typed(result))
        ended = " with an error" if result.get("isError") else ""
        task.status, task.message = "completed", f"{task.tool} ended{ended}"

    def _find(self, ctx: ServerRequestContext[Any], params: TaskParams) -> Task:
        if not modern(ctx):
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        if not declared(ctx):
            raise MCPError(
                code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=f"{ctx.method} needs the {EXTENSION} extension declared in the request's client capabilities",
                data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
            )
        headers = getattr(ctx.request, "headers", None)  # over HTTP: SEP-2663 routes tasks/* by Mcp-Name
        if headers is not None and decode_header_value(headers.get(MCP_NAME_HEADER)) != params.task_id:
            raise MCPError(
                code=types.HEADER_MISMATCH,
                message=f"{MCP_NAME_HEADER} header does not match the request body's 'taskId' parameter",
            )
        self._sweep()
        task = self._tasks.get(params.task_id)
        if task is None or task.owner != owner_of(ctx, self.transport):
            shown = json.dumps(params.task_id[:80])
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Failed to retrieve task: no task {shown} of this client (unknown, expired or another's)",
            )
        return task

    async def _get(self, ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
        return {"resultType": "complete", **self._find(ctx, params).wire()}

    async def _cancel(self, ctx: ServerRequestContext[Any], params: TaskParams) -> types.EmptyResult:
        task = self._find(ctx, params)
        if not task.job.done():
            log.info("task %s of %s cancelled by its client", task.task_id, task.tool)
            task.job.cancel()
        return types.EmptyResult()

    async def _update(self, ctx: ServerRequestContext[Any], params: UpdateParams) -> types.EmptyResult:
        self._find(ctx, params)  # no task here waits for input: every response is one not asked for
        return types.EmptyResult()


def declared(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the request is of the 2026-07-28 era and declares the tasks extension."""
    capabilities = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return modern(ctx) and bool(extensions) and EXTENSION in (extensions or {})


def owner_of(ctx: ServerRequestContext[Any], transport: str) -> Owner:
    """Whose a task is: the transport, its session (if it has one) and the client's declared name."""
    connection = connection_of(ctx.session)
    session = connection.session_id if connection is not None else None
    params = ctx.session.client_params
    name = params.client_info.name if params is not None else ""
    return (transport, session or "", name)

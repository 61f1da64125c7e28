"""One MCP server behind the gateway: one session shared by every caller, started on first use.

A stdio server is started when first needed and stopped after `idle` seconds without calls, when the
gateway closes, or when its descriptor changes. A server that ends on its own is started again on the
next use, after a delay that doubles with each crash in a row (the failure is logged and kept in
`status`). An HTTP session the server forgot (404 on its session id) is opened again once per call.
Every `tools/list` page passes `listing.sift` before the session reads it, and a listing is bounded
(`listing.Limits`). The server's other notifications go, as plain JSON, to the `Listener`s listening (the
gateway's events), at once and with nothing queued; a server with listeners is not stopped for idleness.

The secrets the server was given are cut out of everything it says (its messages and its stderr) before
anything reads it, and out of every failure said of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import ClientSession, MCPError
from mcp.client.session import ClientRequestContext, IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.message import SessionMessage

from aai_gateway import __version__
from aai_gateway.errors import AaiError, AppNotRunning, AutomationFailed, Timeout
from aai_gateway.mcp_client.listing import MAX_TOOLS, Limits, Sifted, sift
from aai_gateway.mcp_client.redacting import RedactedStream
from aai_gateway.mcp_client.stdio import Child, spawn
from aai_gateway.relay import Relay
from aai_gateway.secret_forms import all_forms, cut

log = logging.getLogger("aai_gateway.mcp_client")

BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
STEADY = 60.0
"""Seconds a server must have run for its next crash to count as the first in a row again."""

Streams = tuple[Any, Any]
"""A transport's two message streams, as the SDK's session takes them."""


@dataclass(frozen=True, slots=True)
class Launch:
    """How to reach one server, its secrets already resolved."""

    app_id: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    idle: float = 600.0
    """Seconds without calls after which a stdio server is stopped; 0 keeps it running."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """The values of `env` and `headers` that are secrets: cut out of everything the server says."""

    @property
    def kind(self) -> str:
        return "http" if self.url else "stdio"


@dataclass(frozen=True, slots=True)
class ServerStatus:
    app_id: str
    kind: str
    state: str
    """"stopped", "starting", "running", "restarting" (after a crash) or "failed" (never started)."""
    pid: int | None
    restarts: int
    last_failure: str | None
    tools: int | None
    problems: tuple[str, ...] = ()
    """What is wrong with what the server lists: tools left out or not fully checked, a listing cut short."""


@dataclass(frozen=True, eq=False)
class Listener:
    """Who hears a server's notifications: `heard(method, params)` for each, on the event loop (it must not
    block), and `ended(why)` once when the session ends (`why` says how: "exited with code 1", ...)."""

    heard: Callable[[str, Mapping[str, Any]], None]
    ended: Callable[[str], None]


class Server:
    def __init__(self, launch: Launch, on_tools_changed: Callable[[str], None] | None = None) -> None:
        self.launch = launch
        self._secrets = all_forms(launch.secrets)
        """Every form of every secret the server was given, longest first."""
        self._on_tools_changed = on_tools_changed
        self._session: ClientSession | None = None
        self._child: Child | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        self._tools: list[dict[str, Any]] | None = None
        self._state = "stopped"
        self._crashes = 0
        self._restarts = 0
        self._ended_at = 0.0
        self._last_failure: str | None = None
        self._busy = 0
        self._used = time.monotonic()
        self._relays: list[Relay | None] = []
        """The calls under way, by the way back to each one's caller."""
        self._sifted = Sifted()
        self._version: str | None = None
        """The protocol version the session agreed on."""
        self._listing_problems: tuple[str, ...] = ()
        self._listeners: list[Listener] = []
        self.capabilities: dict[str, Any] = {}
        """What the server declared it can do (`initialize`'s `capabilities`, as JSON); empty until it started."""
        self.tool_problems: tuple[str, ...] = ()
        """What the gateway found wrong with the listed tools (set by whoever serves them)."""

    @property
    def label(self) -> str:
        return self.launch.app_id

    def status(self) -> ServerStatus:
        return ServerStatus(
            app_id=self.launch.app_id,
            kind=self.launch.kind,
            state=self._state,
            pid=self._child.pid if self._child is not None and not self._child.exited.is_set() else None,
            restarts=self._restarts,
            last_failure=self._last_failure,
            tools=len(self._tools) if self._tools is not None else None,
            problems=(*self._listing_problems, *self.tool_problems),
        )

    async def tools(self, timeout: float) -> list[dict[str, Any]]:
        """The server's `tools/list` (every page, within `Limits`), as JSON; fetched once until the server
        says it changed. Tools that are no MCP tools are left out (`listing.sift`)."""
        if self._tools is not None:
            return self._tools
        self._sifted = Sifted()
        limits = Limits()
        stopped: str | None = None
        async with self._using(timeout) as session:
            listed: list[dict[str, Any]] = []
            cursor: str | None = None
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
                listed.extend(dumped)
                cursor = page.next_cursor
                stopped = limits.add(dumped, cursor)
                if not cursor or stopped:
                    break
        problems = list(self._sifted.left_out)
        if stopped:
            listed = listed[:MAX_TOOLS]
            problems.append(f"the listing was cut short after {len(listed)} tools: {stopped}")
            log.warning("%s: the tool listing was cut short after %d tools: %s", self.label, len(listed), stopped)
        for why in self._sifted.left_out:
            log.warning("%s: %s", self.label, why)
        for tool in listed:
            if tool["name"] in self._sifted.output_schemas:
                tool["outputSchema"] = self._sifted.output_schemas[tool["name"]]
        self._listing_problems = tuple(problems)
        self._tools = listed
        return listed

    async def call(
        self, name: str, args: Mapping[str, Any], timeout: float, relay: Relay | None = None
    ) -> dict[str, Any]:
        """`tools/call` on the server; the result as the server sent it (content, structuredContent, isError).

        While it runs, the server's progress goes to `relay`, and so do its elicitation and sampling requests
        when this is the only call under way (a request names no call it belongs to)."""
        progress: ProgressFnT | None = relay.progress if relay is not None else None
        for attempt in (1, 2):
            try:
                async with self._using(timeout) as session:
                    self._relays.append(relay)
                    try:
                        result = await session.call_tool(name, dict(args), progress_callback=progress)
                    finally:
                        self._relays.remove(relay)
            except _Expired:
                if attempt == 2:
                    raise AppNotRunning(f"{self.label}: the server ended the session twice in a row") from None
                log.info("%s: the HTTP session expired; opening a new one", self.label)
                continue
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)
        raise AssertionError("unreachable")

    @asynccontextmanager
    async def _using(self, timeout: float) -> AsyncIterator[ClientSession]:
        """A live session for one request, which must be answered within `timeout` seconds in all."""
        deadline = time.monotonic() + timeout
        self._busy += 1
        try:
            session = await self._connect(timeout)
            left = deadline - time.monotonic()
            try:
                with anyio.fail_after(max(left, 0.001)):
                    yield session
            except TimeoutError:
                raise Timeout(f"{self.label} did not answer within {timeout:g} s") from None
            except MCPError as exc:
                raise await self._failure(exc, session) from None
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, httpx2.HTTPError) as exc:
                raise AppNotRunning(self._gone(f"the connection closed ({type(exc).__name__})")) from None
        finally:
            self._busy -= 1
            self._used = time.monotonic()

    async def _failure(self, exc: MCPError, session: ClientSession) -> AaiError | _Expired:
        if exc.error.code == types.CONNECTION_CLOSED or (self._child is not None and self._child.exited.is_set()):
            return AppNotRunning(self._gone("the connection closed"))
        if self.launch.url and await _forgotten(exc, session):
            self._stop.set()
            return _Expired()
        if exc.error.code == types.REQUEST_TIMEOUT:
            return Timeout(f"{self.label}: {exc.error.message}")
        return AutomationFailed(f"{self.label}: {exc.error.message}")

    def _gone(self, why: str) -> str:
        child = self._child
        if child is not None and child.exited.is_set():
            said = f"; it said: {child.stderr[-1]}" if child.stderr else ""
            return f"{self.label} {_ending(child)} during the call{said}; it is started again on the next call"
        again = "reached" if self.launch.url else "started"
        return f"{self.label}: {why}; it is {again} again on the next call"

    async def _connect(self, timeout: float) -> ClientSession:
        async with self._lock:
            if self._session is not None and self._task is not None and not self._task.done():
                if not self._ended():
                    return self._session
                await self._wind_down()
            wait = self._backoff()
            if wait > timeout:
                raise AppNotRunning(
                    f"{self.label} crashed {self._crashes} times in a row (last: {self._last_failure}); "
                    f"it is started again in {wait:.1f} s"
                )
            if wait:
                await asyncio.sleep(wait)
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[ClientSession] = loop.create_future()
            self._stop = asyncio.Event()
            self._state = "starting"
            self._task = asyncio.create_task(self._run(ready), name=f"mcp server {self.label}")
            try:
                with anyio.fail_after(timeout):
                    return await asyncio.shield(ready)
            except TimeoutError:
                self._stop.set()
                self._task.cancel()
                self._last_failure = f"did not start within {timeout:g} s"
                raise Timeout(f"{self.label} did not start and answer within {timeout:g} s") from None

    def _ended(self) -> bool:
        """Whether the session is over: the stdio server exited (the session may not have noticed yet), or
        it was asked to stop (an HTTP session the server forgot)."""
        return self._stop.is_set() or (self._child is not None and self._child.exited.is_set())

    async def _wind_down(self) -> None:
        """Let the session of a server that ended finish, recording the crash, before another starts."""
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._task), 10)

    def _backoff(self) -> float:
        if not self._crashes:
            return 0.0
        delay = min(BACKOFF_FIRST * 2.0 ** (self._crashes - 1), BACKOFF_MAX)
        return max(0.0, self._ended_at + delay - time.monotonic())

    async def _run(self, ready: asyncio.Future[ClientSession]) -> None:
        started = time.monotonic()
        crashed = False
        try:
            async with self._streams() as streams, self._sifting(streams) as sifting, self._client(sifting) as session:
                initialized = await session.initialize()
                self._version = initialized.protocol_version
                self.capabilities = initialized.capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
                self._session = session
                self._state = "running"
                if self._crashes:
                    self._restarts += 1
                ready.set_result(session)
                crashed = await self._serve()
        except Exception as exc:
            crashed = True
            why = self._redacted(_reason(exc))
            if self._child is not None and self._child.stderr:
                why = f"{why}; it said: {self._child.stderr[-1]}"
            self._last_failure = why
            log.warning("%s: the server failed: %s", self.label, why)
            if not ready.done():
                verb = "reached" if self.launch.url else "started"
                ready.set_exception(AppNotRunning(f"{self.label} could not be {verb}: {why}"))
        finally:
            self._session = None
            self._child = None
            self._ended_at = time.monotonic()
            if crashed:
                self._crashes = 1 if self._ended_at - started > STEADY else self._crashes + 1
                self._state = "restarting"
            else:
                self._state = "stopped"
            if not ready.done():
                ready.set_exception(AppNotRunning(f"{self.label} stopped before it was ready"))
            self._tell_ended((self._last_failure or "ended") if crashed else "was stopped")

    async def _serve(self) -> bool:
        """Until asked to stop, idle for too long, or the process ends; True when it ended on its own."""
        child = self._child
        idle = self.launch.idle if self.launch.kind == "stdio" else 0
        while True:
            if child is not None and child.exited.is_set():
                await _reaped(child)
                said = f"; it said: {child.stderr[-1]}" if child.stderr else ""
                self._last_failure = f"{_ending(child)}{said}"
                log.warning("%s: the server %s", self.label, self._last_failure)
                return True
            if idle and not self._busy and not self._listeners and time.monotonic() - self._used >= idle:
                log.info("%s: stopped after %g s without calls", self.label, idle)
                return False
            if self._stop.is_set():
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), 0.5)

    def _redacted(self, text: str) -> str:
        return cut(text, self._secrets)

    @asynccontextmanager
    async def _streams(self) -> AsyncIterator[Streams]:
        async with self._transport() as (read, write):
            yield (RedactedStream(read, self._secrets) if self._secrets else read), write

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Streams]:
        launch = self.launch
        if launch.url:
            client = httpx2.AsyncClient(headers=dict(launch.headers), timeout=httpx2.Timeout(30.0, read=300.0))
            async with client, streamable_http_client(launch.url, http_client=client) as (read, write):
                yield read, write
            return
        assert launch.command is not None
        spawning = spawn(self.label, launch.command, launch.args, launch.env, launch.cwd, redact=self._redacted)
        async with spawning as child:
            self._child = child
            yield child.read, child.write

    @asynccontextmanager
    async def _sifting(self, streams: Streams) -> AsyncIterator[Streams]:
        """`streams` with every `tools/list` page sifted (`listing.sift`) on its way to the session."""
        source, write = streams
        sink, read = anyio.create_memory_object_stream[SessionMessage | Exception](16)

        async def relay() -> None:
            async with sink:
                async for message in source:
                    await sink.send(self._sift(message))

        async with source, sink, read, anyio.create_task_group() as group:
            group.start_soon(relay)
            try:
                yield read, write
            finally:
                group.cancel_scope.cancel()

    def _sift(self, message: SessionMessage | Exception) -> SessionMessage | Exception:
        if not isinstance(message, SessionMessage) or not isinstance(message.message, types.JSONRPCResponse):
            return message
        result = message.message.result
        if not isinstance(result.get("tools"), list):  # only a tools/list result holds a `tools` list
            return message
        response = message.message.model_copy(update={"result": sift(result, self._sifted, self._version)})
        return SessionMessage(response, message.metadata)

    def _client(self, streams: Streams) -> ClientSession:
        read, write = streams
        return ClientSession(
            read,
            write,
            message_handler=self._notified,
            elicitation_callback=self._elicit,
            sampling_callback=self._sample,
            client_info=types.Implementation(name="aai-gateway", version=__version__),
        )

    async def _notified(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            log.info("%s: the server's tool list changed", self.label)
            self._tools = None
            if self._on_tools_changed is not None:
                self._on_tools_changed(self.label)
        if self._listeners and not isinstance(message, Exception | types.ProgressNotification):
            # handed over at once: the SDK runs this in a task of its own per notification, so nothing waits here
            params = message.params.model_dump(mode="json", by_alias=True, exclude_none=True) if message.params else {}
            for listener in list(self._listeners):
                try:
                    listener.heard(message.method, params)
                except Exception:
                    log.exception("%s: a listener failed on %s", self.label, message.method)

    async def listen(self, listener: Listener, timeout: float) -> None:
        """Start the server if need be (within `timeout` seconds) and hand `listener` its notifications until
        `unlisten` or the session's end."""
        await self._connect(timeout)
        if self._session is None or self._ended():
            raise AppNotRunning(f"{self.label} ended as it started; it is started again on the next use")
        self._listeners.append(listener)

    def unlisten(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)
            self._used = time.monotonic()  # idleness counts from when the last listener left

    def _tell_ended(self, why: str) -> None:
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            try:
                listener.ended(self._redacted(why))
            except Exception:
                log.exception("%s: a listener failed on the end of the session", self.label)

    async def subscribe(self, uri: str, timeout: float) -> None:
        """`resources/subscribe` to `uri`: the server then says when that resource changes."""
        request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
        async with self._using(timeout) as session:  # the SDK's subscribe_resource warns: modern servers use listen
            await session.send_request(request, types.EmptyResult)

    async def unsubscribe(self, uri: str, timeout: float) -> None:
        """`resources/unsubscribe` from `uri`, on the session under way only (a server that ended forgot it)."""
        if self._session is None or self._ended():
            return
        request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
        async with self._using(timeout) as session:
            await session.send_request(request, types.EmptyResult)

    async def _elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        answer = await self._relayed("elicitation", params)
        return answer if isinstance(answer, types.ErrorData) else types.ElicitResult.model_validate(answer)

    async def _sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        answer = await self._relayed("sampling", params)
        return answer if isinstance(answer, types.ErrorData) else types.CreateMessageResult.model_validate(answer)

    async def _relayed(
        self, what: str, params: types.ElicitRequestParams | types.CreateMessageRequestParams
    ) -> dict[str, Any] | types.ErrorData:
        """The answer of the caller of the one call under way to the server's request, or a refusal."""
        relay = self._asker(what)
        if isinstance(relay, types.ErrorData):
            return relay
        ask = relay.elicit if what == "elicitation" else relay.sample
        try:
            answer = await ask(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        except MCPError as exc:
            return exc.error
        if answer is None:
            return _refusal(f"the client calling {self.label} through aai-gateway does not take {what} requests")
        return answer

    def _asker(self, what: str) -> Relay | types.ErrorData:
        """The caller a request of the server goes to: the caller of the one call under way."""
        if len(self._relays) > 1:
            return _refusal(
                f"{len(self._relays)} calls to {self.label} are under way through aai-gateway, and a {what} "
                "request does not say which one it belongs to; it is refused"
            )
        relay = self._relays[0] if self._relays else None
        if relay is None:
            return _refusal(f"no client of aai-gateway is calling {self.label} to answer a {what} request")
        return relay

    def forget_tools(self) -> None:
        self._tools = None

    async def aclose(self) -> None:
        """Stop the server (and its whole process group) and wait until it is gone."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await task
        self._state = "stopped"


def _refusal(message: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=message)


class _Expired(Exception):
    """The HTTP server forgot our session; one more try on a new one."""


async def _forgotten(exc: MCPError, session: ClientSession) -> bool:
    """Whether an HTTP server no longer knows the session: a 404 on its id ("Session terminated"), or an
    HTTP error without a JSON-RPC body (some servers answer an unknown session with 400) that a ping on
    the same session meets too."""
    if exc.error.message == "Session terminated":
        return True
    if exc.error.code != types.INTERNAL_ERROR or exc.error.message != "Server returned an error response":
        return False
    try:
        with anyio.fail_after(5):
            await session.send_ping()
    except MCPError:
        return True
    except TimeoutError:
        return False
    return False


def _ending(child: Child) -> str:
    code = child.process.returncode
    if code is None:
        return "closed its stdout"
    return f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"


async def _reaped(child: Child) -> None:
    """A moment for the exit status of a server whose stdout ended to arrive."""
    for _ in range(20):
        if child.process.returncode is not None:
            return
        await asyncio.sleep(0.01)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"the command was not found ({exc.filename or exc})"
    if isinstance(exc, MCPError):
        return exc.error.message
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _reason(exc.exceptions[0])
    return str(exc) or type(exc).__name__

"""One call, start to end: the arguments checked, the consent gate passed, the executor run within the
call's timeout and the gateway's limits, and every outcome logged and recorded in the history."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from typing import Any

from aai_gateway import logs
from aai_gateway.calls.apps import Apps
from aai_gateway.calls.caller import Caller
from aai_gateway.calls.servers import Servers
from aai_gateway.calls.slots import Slots
from aai_gateway.config import Settings
from aai_gateway.consent import ConsentGate
from aai_gateway.consent.launches import asked_by
from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.descriptor.argument_check import ArgumentCheck
from aai_gateway.errors import AaiError, AppNotFound, AutomationFailed, InvalidParams, Timeout
from aai_gateway.executors import ToolCall
from aai_gateway.history import HistoryStore, Recorder, Redactor, known_secrets
from aai_gateway.history.recorder import UNKNOWN, Pending, Unknown
from aai_gateway.memo import LIMIT, PerObject
from aai_gateway.telemetry import start as start_telemetry
from aai_gateway.text import printable, unencodable

log = logging.getLogger("aai_gateway.calls")


class Unsuccessful(Exception):
    """Raised by `Calls.run`'s work that ended badly but has an answer all the same (a plan that failed and
    was rolled back): recorded as `error`, then `value` is returned."""

    def __init__(self, error: AaiError, value: Any) -> None:
        super().__init__(error.detail)
        self.error = error
        self.value = value


@dataclass(frozen=True, slots=True)
class _Route:
    """What a call of one app's tool resolves to, before its arguments are looked at."""

    app: Descriptor
    binding: Binding
    tool: Tool
    check: ArgumentCheck
    app_key: str
    """Whose consent decisions apply: the app's id, or a discovered web app's site."""
    marks_trusted: bool
    timeout: float
    share: Slots


class Calls:
    def __init__(
        self, settings: Settings, apps: Apps, servers: Servers, history: HistoryStore, consent: ConsentGate
    ) -> None:
        self.settings = settings
        self.apps = apps
        self.servers = servers
        self.history = history
        self.consent = consent
        self._validators: PerObject[ArgumentCheck] = PerObject()
        self._routes: dict[tuple[str, str], _Route] = {}
        """Each installed app's tool called so far, by the app id and tool name called."""
        self._recorder = Recorder(history, Redactor(known_secrets(settings)), self.called)
        self._slots = Slots(settings.max_concurrent_calls)
        self._app_slots: dict[str, Slots] = {}
        """Each app's own share of the slots, so one hung app cannot hold every slot."""
        self._running = 0
        """Calls under way; one that ends alone commits its record without waiting for others to join it."""
        self.telemetry = start_telemetry(settings, self)
        """Spans and metrics of the calls, or None when not configured (then nothing of it is loaded)."""

    def forget(self) -> None:
        """Drop the routes and argument checks worked out for tools of descriptors read before a rescan."""
        self._validators.clear()
        self._routes.clear()

    def called(self, app_id: str, tool_name: str) -> tuple[Descriptor, Binding, Tool]:
        """The app and tool of a call, with an MCP server's tools as served: the history masks arguments
        by their schemas."""
        served = self.servers.served(app_id)
        return self.apps.tool(served if served is not None else self.apps.app(app_id), app_id, tool_name)

    def recorded_arguments(self, app_id: str, tool_name: str, args: Any) -> Any:
        """A call's arguments as its history record holds them: secrets redacted, long strings shortened."""
        return self._recorder.arguments(printable(app_id), printable(tool_name), args)

    def known(self, app_id: str, tool_name: str) -> bool:
        return self.apps.known(app_id, tool_name)

    def call(
        self, app_id: str, tool_name: str, args: Mapping[str, Any] | None, caller: Caller
    ) -> Coroutine[Any, Any, Any]:
        """Run one tool (awaited by the caller); every outcome is logged and recorded in the history under one
        correlation id, and is a span and metrics too when telemetry is on.

        The record is committed before the answer goes back: whatever a caller received is in the history.
        """
        call_id = os.urandom(6).hex()  # as random as uuid4().hex[:12], for a fraction of its cost
        args = {} if args is None else args
        if self.telemetry is None:  # when telemetry is off, this check is all it costs a call
            return self._recorded(call_id, app_id, tool_name, args, caller)
        return self._traced(call_id, app_id, tool_name, args, caller)

    async def _traced(self, call_id: str, app_id: str, tool_name: str, args: Mapping[str, Any], caller: Caller) -> Any:
        telemetry = self.telemetry
        if telemetry is None:  # turned off since the call was made
            return await self._recorded(call_id, app_id, tool_name, args, caller)
        with telemetry.call(
            call_id, app_id, tool_name, args, caller=caller.name, transport=caller.transport, meta=caller.trace
        ) as span:
            if caller.ask is not None:
                caller = replace(caller, ask=span.asking(caller.ask))
            return await self._recorded(call_id, app_id, tool_name, args, caller)

    async def run(
        self,
        app_id: str,
        tool_name: str,
        args: Mapping[str, Any],
        caller: Caller,
        work: Callable[[str], Awaitable[Any]],
        *,
        schema: Mapping[str, Any] | None = None,
        kept: Callable[[Any], Any] | None = None,
    ) -> Any:
        """`work` (a plan) recorded as one call of `app_id`'s `tool_name`; it is given the record's id, which
        the records of the calls it makes name as their parent. Work that raises `Unsuccessful` is recorded as
        failed, and its value returned.

        `schema` describes `args`: what it marks sensitive is masked in the record and cut out of the records
        of the calls the work makes (a saved workflow's inputs flow into its steps). `kept` is what the record
        keeps of the work's value, by default the value itself."""
        call_id = os.urandom(6).hex()

        def working(asked: Callable[[str], None]) -> Awaitable[Any]:
            return work(call_id)

        described = Tool(name=tool_name, description="", parameters=schema) if schema is not None else None
        try:
            return await self._recorded(
                call_id, app_id, tool_name, args, caller, work=working, described=described, kept=kept
            )
        except Unsuccessful as ended:
            return ended.value

    async def _recorded(
        self,
        call_id: str,
        app_id: str,
        tool_name: str,
        args: Mapping[str, Any],
        caller: Caller,
        *,
        work: Callable[[Callable[[str], None]], Awaitable[Any]] | None = None,
        described: Tool | None = None,
        kept: Callable[[Any], Any] | None = None,
    ) -> Any:
        shown_app, shown_tool = printable(app_id), printable(tool_name)  # what the log and history can write
        where = (call_id, caller.name, shown_app, shown_tool)
        pending = self._recorder.begin(
            call_id,
            caller=caller.name,
            transport=caller.transport,
            app=shown_app,
            tool=shown_tool,
            args=args,
            parent=caller.parent,
            step=caller.step,
        )
        started = time.perf_counter()
        late = time.monotonic() - caller.arrived if caller.arrived is not None else 0.0
        asked: list[str] = []  # how the consent question this call asked ended, if it asked one
        found: list[Tool | Unknown | None] = [UNKNOWN if work is None else described]  # the tool called: the last

        def found_tool(tool: Tool) -> None:
            found.append(tool)
            # once the call waits for its app, the record's arguments are worked out meanwhile
            asyncio.get_running_loop().call_soon(self._recorder.prepare, pending, tool)

        try:
            calling: Awaitable[Any]
            if work is None:
                calling = self._call(app_id, tool_name, args, caller, late, asked=asked.append, found=found_tool)
            else:
                calling = self._settled(pending, described, work, asked.append)
            self._running += 1  # counted among the calls under way while it runs
            try:
                result = await asked_by(caller.name, caller.ask, calling)
            finally:
                self._running -= 1
        except (AaiError, Unsuccessful) as raised:
            exc = raised.error if isinstance(raised, Unsuccessful) else raised
            elapsed = _ms(started)
            _after_answer("call %s %s %s:%s failed %s in %.1f ms: %s", *where, exc.type, elapsed, exc.detail)
            await self._recorder.failed(
                pending, exc, elapsed, tool=found[-1], alone=not self._running, consent=_asked(asked)
            )
            raise
        except asyncio.CancelledError:
            elapsed = _ms(started)
            log.info("call %s %s %s:%s cancelled after %.1f ms", *where, elapsed)
            self._recorder.cancelled(pending, elapsed, tool=found[-1])
            raise
        except Exception as exc:
            log.exception("call %s %s %s:%s crashed", *where)
            failure = AutomationFailed(f"the gateway failed unexpectedly ({type(exc).__name__}); see its log")
            await self._recorder.failed(pending, failure, _ms(started), tool=found[-1])
            raise failure from exc
        elapsed = _ms(started)
        _after_answer("call %s %s %s:%s ok in %.1f ms", *where, elapsed)
        recorded = result if kept is None else kept(result)
        await self._recorder.ok(
            pending, recorded, elapsed, tool=found[-1], alone=not self._running, consent=_asked(asked)
        )
        return result

    async def _settled(
        self,
        run: Pending,
        described: Tool | None,
        work: Callable[[Callable[[str], None]], Awaitable[Any]],
        asked: Callable[[str], None],
    ) -> Any:
        """A run's work, ended once the records of its steps are committed (see history/recorder.py)."""
        run_id = run.call_id
        self._recorder.running(run, described)
        try:
            result = await work(asked)
        except asyncio.CancelledError:
            self._recorder.forsake(run_id)
            raise
        except BaseException:
            await self._recorder.settle(run_id)
            raise
        await self._recorder.settle(run_id)
        return result

    async def _call(
        self,
        app_id: str,
        tool_name: str,
        args: Mapping[str, Any],
        caller: Caller,
        late: float = 0.0,
        *,
        asked: Callable[[str], None] | None = None,
        found: Callable[[Tool], None] | None = None,
    ) -> Any:
        _check_text(app_id, tool_name, args)
        if self.settings.require_history and (trouble := self.history.trouble()) is not None:
            raise AutomationFailed(
                f"refused: requireHistory is set and {trouble.describe()}; calls are taken again once it can be written"
            )
        route = self._routes.get((app_id, tool_name)) or await self._route(app_id, tool_name)
        app, binding, tool = route.app, route.binding, route.tool
        if found is not None:
            found(tool)
        if not isinstance(args, Mapping):
            raise InvalidParams(f"args must be an object of named arguments, got {type(args).__name__}")
        if not route.check.passes(args):
            await route.check.run(args)
        await self.consent.check(
            caller.name,
            app,
            tool,
            args,
            app_key=route.app_key,
            trusted=caller.transport == "cli",
            ask=caller.ask,
            transport=caller.transport,
            marks_trusted=route.marks_trusted,
            asked=asked,
        )
        executor = self.servers.executor(binding)
        if self.telemetry is not None:  # traced for this run only: the gateway keeps the executor as it is
            executor = self.telemetry.executor(executor)
        timeout = route.timeout
        late = max(late, 0.0)
        if late:  # the request waited for the gateway to start: its timeout began when it arrived
            if late >= timeout:
                raise Timeout(
                    f"{app.app_id} was not called: the gateway took {late:.3g} s to start (timeout {timeout:g} s)"
                )
            timeout -= late
        # the app's own share first, so calls queued for a saturated app hold none of the gateway's slots
        share, slots = route.share, self._slots
        if not share.take():
            await share.wait()
        try:
            if not slots.take():
                await slots.wait()
            try:
                if not late:
                    return await executor.execute(ToolCall(app, binding, tool, args, timeout, caller.relay))
                try:
                    return await executor.execute(ToolCall(app, binding, tool, args, timeout, caller.relay))
                except Timeout as exc:
                    waited = (
                        f"the call waited {late:.3g} s for the gateway to start; its timeout is {timeout + late:g} s"
                    )
                    raise Timeout(f"{exc.detail} ({waited})") from None
            finally:
                slots.give()
        finally:
            share.give()

    async def _route(self, app_id: str, tool_name: str) -> _Route:
        """Where a call of `app_id`'s `tool_name` goes; kept for an installed app's tools until the apps change
        (`forget`), since an MCP server's tools and a web app's site may change meanwhile."""
        try:
            app = self.apps.app(app_id)
        except AppNotFound:
            app = await self.apps.resolve(app_id)  # a web app's URL, discovered now
        if app.mcp is not None:
            app = await self.servers.live(app)
        app, binding, tool = self.apps.tool(app, app_id, tool_name)
        site = self.apps.web_apps.site_of(app)  # a discovered web app is known by its site, not the id it claims
        own = self.settings.apps.get(app.app_id)
        route = _Route(
            app,
            binding,
            tool,
            self._argument_check(tool),
            app_key=site.origin if site else app.app_id,
            marks_trusted=site is None,  # a website's own read-only marks never skip a question
            # the user's word for this app first, then the descriptor's for this tool, then the user's default
            timeout=(own.timeout if own else None) or tool.timeout or self.settings.default_timeout,
            share=self._app_share(app.app_id),
        )
        if app.mcp is None and site is None:
            if len(self._routes) >= LIMIT:
                self._routes.clear()
            self._routes[app_id, tool_name] = route
        return route

    def _app_share(self, app_id: str) -> Slots:
        """The slots one app may hold at once: `apps.<id>.maxConcurrentCalls`, else `maxCallsPerApp`."""
        share = self._app_slots.get(app_id)
        if share is None:
            own = self.settings.apps.get(app_id)
            limit = (own.max_concurrent_calls if own else None) or self.settings.max_calls_per_app
            share = self._app_slots[app_id] = Slots(min(limit, self.settings.max_concurrent_calls))
        return share

    async def check_args(self, tool: Tool, args: Mapping[str, Any]) -> None:
        """The tool's parameter schema applied to `args`; INVALID_PARAMS says what is wrong and where."""
        await self._argument_check(tool).run(args)

    def _argument_check(self, tool: Tool) -> ArgumentCheck:
        check = self._validators.get(tool)
        if check is None:
            check = self._validators.put(tool, ArgumentCheck(tool.name, tool.parameters))
        return check

    async def aclose(self) -> None:
        telemetry, self.telemetry = self.telemetry, None
        if telemetry is not None:
            await telemetry.aclose()


def _check_text(app_id: str, tool_name: str, args: Any) -> None:
    """Every string of a call must encode as UTF-8: one holding half of a surrogate pair (a lone `\\ud800`
    escape) is no text an app can take, nor one the history and the answer can hold."""
    field = unencodable({"app": app_id, "tool": tool_name, "args": args}, "")
    if field is not None:
        raise InvalidParams(
            f"{field[1:]} holds half of a surrogate pair (a lone \\ud800-\\udfff escape), which is not text"
        )


def _after_answer(message: str, *args: Any) -> None:
    """A call's log line, written once the turn of the event loop that sends the call's answer is over:
    the caller does not wait for the line's two writes (stderr and the log file). The history record,
    unlike the line, is committed before the answer."""
    logs.after_turn(log, message, *args)


def _asked(outcomes: list[str]) -> str | None:
    """How the call's consent question ended: the first outcome (a call let through after a wait is checked again)."""
    return outcomes[0] if outcomes else None


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000

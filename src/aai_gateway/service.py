"""The gateway: find the app → find the tool → check the arguments → run it with its executor.

Transports (MCP over stdio or HTTP, the command line) call this and only this; it knows nothing of
any protocol, and raises only `AaiError`s for an agent to see.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

from aai_gateway import executors
from aai_gateway.config import Settings
from aai_gateway.consent import Answer, Ask, ConsentGate, Question
from aai_gateway.consent.launches import LaunchGate, asked_by
from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.descriptor.argument_check import ArgumentCheck
from aai_gateway.descriptor.guide import guide
from aai_gateway.discovery import Registry, scan, wellknown
from aai_gateway.discovery.webapps import WebApps
from aai_gateway.errors import (
    AaiError,
    AaiJsonInvalid,
    AppNotFound,
    AutomationFailed,
    AutomationNotSupported,
    InvalidParams,
    Timeout,
    ToolNotFound,
)
from aai_gateway.executors import Executor, ListsTools, ToolCall
from aai_gateway.executors import Forwarded as Forwarded  # noqa: PLC0414 (re-exported: what the MCP layer passes on)
from aai_gateway.history import HISTORY_FILE, HistoryStore, Recorder, Redactor, known_secrets
from aai_gateway.relay import Relay
from aai_gateway.spelling import Spelling, spelling
from aai_gateway.telemetry import start as start_telemetry
from aai_gateway.text import printable, unencodable

if TYPE_CHECKING:
    from aai_gateway.search.finder import Finder

log = logging.getLogger("aai_gateway.calls")

MAX_BATCH = 100
"""Most calls one aai:batch may carry."""
CHANGES_SETTLE = 0.05
"""Seconds an MCP server's tool-list changes are gathered before clients are told once."""

AppsChanged = Callable[[set[str]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asked: the MCP client's name (or "cli") and the transport it came over.

    `ask` puts a consent question to the user (MCP elicitation), when the transport can; the "cli"
    transport is the user at their own terminal, allowed unless a rule or stored decision denies.
    """

    name: str = "unknown"
    transport: str = "stdio"
    ask: Ask | None = field(default=None, compare=False, repr=False)
    arrived: float | None = field(default=None, compare=False, repr=False)
    """When the request reached the gateway (`time.monotonic()`), if it waited for the gateway to start;
    that wait counts against the call's timeout."""
    trace: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    """The request's `params._meta`, given only when telemetry is on: the W3C trace context of the
    client's span (`traceparent`, `tracestate`, SEP-414) that the call's span continues."""
    relay: Relay | None = field(default=None, compare=False, repr=False)
    """The way back to the client while a call runs (an MCP server's progress and questions), if any."""


class Gateway:
    def __init__(
        self, settings: Settings, registry: Registry | None = None, history: HistoryStore | None = None
    ) -> None:
        self.settings = settings
        self.registry = registry or Registry(scan(settings))
        self._executors: dict[str, Executor] = {}
        self._validators: dict[int, ArgumentCheck] = {}
        self.web_apps = WebApps()
        if history is None:
            history = HistoryStore(settings.aai_home / HISTORY_FILE, settings.history_retention_days)
        self.history = history
        self._recorder = Recorder(history, Redactor(known_secrets(settings)), self._called)
        self._slots = asyncio.Semaphore(settings.max_concurrent_calls)
        self._app_slots: dict[str, asyncio.Semaphore] = {}
        """Each app's own share of the slots, so one hung app cannot hold every slot."""
        self._running = 0
        """Calls under way; one that ends alone commits its record without waiting for others to join it."""
        self.telemetry = start_telemetry(settings, self)
        """Spans and metrics of the calls, or None when not configured (then nothing of it is loaded)."""
        self._live: dict[str, tuple[Descriptor, Descriptor]] = {}
        """An MCP server's app with the server's tools, by app id: (the descriptor read, the one served)."""
        self.listeners: list[AppsChanged] = []
        """Told the ids of apps whose tools changed without a rescan (an MCP server's list changed)."""
        self._notices: set[asyncio.Task[None]] = set()
        self._changing: set[str] = set()
        """Apps whose tools changed since the last notice, while one is on its way."""

    @property
    def platform(self) -> str:
        return self.settings.platform

    @property
    def spelling(self) -> Spelling:
        """The gateway's own tools as they are listed, for every text an agent reads."""
        return spelling(self.settings.tool_names)

    def apps(self) -> list[Descriptor]:
        return self.registry.served()

    def rescan(self) -> set[str]:
        """Scan again; return the ids of apps added, changed or removed (what clients must be told)."""
        before = _fingerprints(self.apps())
        self.registry.replace(scan(self.settings, self.registry.scan))
        self._validators.clear()
        self._live.clear()
        after = _fingerprints(self.apps())
        changed = {app_id for app_id in before.keys() | after.keys() if before.get(app_id) != after.get(app_id)}
        if before.keys() - after.keys():
            self._stop_unserved(set(after))
        if changed:
            log.info("apps changed: %s; now serving %s", ", ".join(sorted(changed)), ", ".join(after) or "none")
        return changed

    async def discover(self, url: str) -> Descriptor:
        """web:discover: fetch (or take from the cache) the web app at `url` and remember it by its site."""
        found = await wellknown.discover(url, self.settings)
        if self.registry.get(found.descriptor.app_id) is not None:
            log.warning(
                "%s claims app id %s, which an installed app has; it is reachable only as %s",
                found.site.origin,
                found.descriptor.app_id,
                found.site.origin,
            )
        self.web_apps.add(found)
        return found.descriptor

    def app(self, app_id: str) -> Descriptor:
        """An installed app by id, else a discovered web app by id, site URL or host."""
        app = self.registry.get(app_id) or self._web_app(app_id)
        if app is None:
            broken = self.registry.scan.broken.get(app_id)
            if broken:
                more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
                raise AaiJsonInvalid(
                    f"the descriptor of {app_id} is invalid: {broken[0]}{more}; "
                    f"run `aai-gateway validate {broken[0].file}` for every problem"
                )
            raise AppNotFound(self._unknown_app(app_id))
        return app

    def _web_app(self, text: str) -> Descriptor | None:
        claims = self.web_apps.by_id(text)
        if len(claims) > 1:
            sites = ", ".join(a.site.origin for a in claims)
            raise AppNotFound(f"several web apps claim the id '{text}' ({sites}); name the one meant by its URL")
        if claims:
            return claims[0].descriptor
        found = self.web_apps.lookup(text)
        return found.descriptor if found else None

    def guide(self, app_id: str) -> str:
        return self.guide_of(self.app(app_id))

    async def guide_live(self, app_id: str, caller: Caller | None = None) -> str:
        """`guide`, for an MCP server's app with the tools the server lists (started if need be)."""
        caller = caller or Caller(name="cli", transport="cli")
        return self.guide_of(await asked_by(caller.name, caller.ask, self.live(self.app(app_id))))

    async def live(self, app: Descriptor) -> Descriptor:
        """`app` as served: an MCP server's app gets the server's tools (`tools/list`, kept until it changes)."""
        binding = app.mcp
        if binding is None:
            return app
        known = self._live.get(app.app_id)
        if known is not None and known[0] is app:
            return known[1]
        executor = self._executor(binding)
        assert isinstance(executor, ListsTools), binding.automation
        own = self.settings.apps.get(app.app_id)
        timeout = (own.timeout if own else None) or self.settings.default_timeout
        tools = await executor.live_tools(app, binding, timeout)
        served = replace(app, bindings={**app.bindings, "mcp": replace(binding, tools=tools)})
        self._live[app.app_id] = (app, served)
        await self._remember_tools(app, tools)
        return served

    async def _remember_tools(self, app: Descriptor, tools: tuple[Tool, ...]) -> None:
        """Keep an MCP server's tools on disk, for searches that must not start it."""
        from aai_gateway.search import server_tools  # noqa: PLC0415 (search loads when used)

        changed = await asyncio.to_thread(server_tools.remember, self.settings.cache_dir, app, tools)
        if changed and "finder" in self.__dict__:
            self.finder.changed()

    async def search(self, query: Any, limit: Any = None) -> tuple[str, dict[str, Any]]:
        """aai:search: the operations that best fit `query`, as text for the model and as structured content."""
        from aai_gateway.search import results  # noqa: PLC0415 (search loads at the first search)

        query, limit = results.checked(query, limit)
        found, usage = await self.finder.search(query, limit)
        names = self.spelling
        return results.answer(
            found, usage, exec_name=names.exec, install_name=names.install, discover_name=names.discover
        )

    async def install(self, app_id: Any, caller: Caller) -> str:
        """aai:install: a library or store entry installed with the user's yes; the answer is its guide."""
        from aai_gateway.search import install  # noqa: PLC0415 (the library loads when an agent installs)

        if not isinstance(app_id, str) or not app_id.strip():
            raise InvalidParams("app must be the id of a library or store entry, as aai_search gives it")
        if self.registry.get(app_id) is not None:
            return f"{app_id} is installed already.\n\n{self.guide(app_id)}"
        found = await install.offer(self.settings, await self.finder.catalogue(), app_id)
        await install.agree(self.settings, found, caller.name, caller.ask, self.consent.ui_url)
        await asyncio.to_thread(install.write, found, self.settings.aai_home, self.consent)
        changed = self.rescan() | {found.app.app_id}
        for listener in self.listeners:
            await listener(changed)
        log.info("%s installed %s from %s", caller.name, found.app.app_id, found.source)
        return f"Installed {found.app.name} ({found.app.app_id}) from {found.source}.\n\n{self.guide(found.app.app_id)}"

    @cached_property
    def finder(self) -> Finder:
        """The search over installed apps, web apps found before, the library and the stores."""
        from aai_gateway.search.finder import Finder  # noqa: PLC0415 (search loads at the first search)

        def web() -> list[tuple[str, Descriptor]]:
            return [(found.site.origin, found.descriptor) for found in self.web_apps.all()]

        return Finder(self.settings, apps=self.apps, web_apps=web, history=self.history)

    def _stop_unserved(self, served: set[str]) -> None:
        """Stop the servers of apps a rescan removed (an MCP server's process), in the background."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop: a one-shot command, whose exit stops everything
            return
        for executor in list(self._executors.values()):
            if isinstance(executor, ListsTools):
                stopping = loop.create_task(executor.retain(served))
                self._notices.add(stopping)
                stopping.add_done_callback(self._notices.discard)

    def _tools_changed(self, app_id: str) -> None:
        """An MCP server's tools changed: list them again on next use, and tell every listener once for a
        burst of changes (a server may say so several times as it starts)."""
        self._live.pop(app_id, None)
        if self._changing:  # a notice is on its way and will name this app too
            self._changing.add(app_id)
            return
        self._changing = {app_id}
        notice = asyncio.ensure_future(self._tell_changed())
        self._notices.add(notice)
        notice.add_done_callback(self._notices.discard)

    async def _tell_changed(self) -> None:
        await asyncio.sleep(CHANGES_SETTLE)
        changed, self._changing = self._changing, set()
        for listener in self.listeners:
            await listener(changed)

    def server_statuses(self) -> list[Any]:
        """How each MCP server served as an app is doing (state, pid, restarts, last failure)."""
        executor = self._executors.get(executors.BACKENDS["mcp"])
        return list(executor.statuses()) if isinstance(executor, ListsTools) else []

    def guide_of(self, app: Descriptor) -> str:
        """The operation guide; a discovered web app's examples name it by its site."""
        site = self.web_apps.site_of(app)
        return guide(app, self.platform, site=site.origin if site else None, exec_name=self.spelling.exec)

    def find(self, app_id: str, tool_name: str) -> tuple[Descriptor, Binding, Tool]:
        return self._find_tool(self.app(app_id), app_id, tool_name)

    def _called(self, app_id: str, tool_name: str) -> tuple[Descriptor, Binding, Tool]:
        """`find`, with an MCP server's tools as served: the history masks arguments by their schemas."""
        known = self._live.get(app_id)
        if known is not None:
            return self._find_tool(known[1], app_id, tool_name)
        return self.find(app_id, tool_name)

    def _find_tool(self, app: Descriptor, app_id: str, tool_name: str) -> tuple[Descriptor, Binding, Tool]:
        found = app.find_tool(self.platform, tool_name)
        if found is None:
            names = [t.name for _, t in app.tools(self.platform)]
            close = difflib.get_close_matches(tool_name, names, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ToolNotFound(
                f"{app_id} has no tool '{tool_name}' on {self.platform}; its tools are: "
                f"{', '.join(names) or 'none'}.{hint}"
            )
        return (app, *found)

    async def call(self, app_id: str, tool_name: str, args: Mapping[str, Any] | None, caller: Caller) -> Any:
        """Run one tool; every outcome is logged and recorded in the history under one correlation id,
        and is a span and metrics too when telemetry is on.

        The record is committed before the answer goes back: whatever a caller received is in the history.
        """
        call_id = os.urandom(6).hex()  # as random as uuid4().hex[:12], for a fraction of its cost
        args = {} if args is None else args
        if self.telemetry is None:  # when telemetry is off, this check is all it costs a call
            return await self._recorded(call_id, app_id, tool_name, args, caller)
        with self.telemetry.call(
            call_id, app_id, tool_name, args, caller=caller.name, transport=caller.transport, meta=caller.trace
        ) as span:
            if caller.ask is not None:
                caller = replace(caller, ask=span.asking(caller.ask))
            return await self._recorded(call_id, app_id, tool_name, args, caller)

    async def _recorded(
        self, call_id: str, app_id: str, tool_name: str, args: Mapping[str, Any], caller: Caller
    ) -> Any:
        shown_app, shown_tool = printable(app_id), printable(tool_name)  # what the log and history can write
        where = (call_id, caller.name, shown_app, shown_tool)
        pending = self._recorder.begin(
            call_id, caller=caller.name, transport=caller.transport, app=shown_app, tool=shown_tool, args=args
        )
        started = time.perf_counter()
        late = time.monotonic() - caller.arrived if caller.arrived is not None else 0.0
        asked: list[str] = []  # how the consent question this call asked ended, if it asked one
        try:
            calling = self._call(app_id, tool_name, args, caller, late, asked=asked.append)
            result = await self._counted(asked_by(caller.name, caller.ask, calling))
        except AaiError as exc:
            elapsed = _ms(started)
            _after_answer("call %s %s %s:%s failed %s in %.1f ms: %s", *where, exc.type, elapsed, exc.detail)
            await self._recorder.failed(pending, exc, elapsed, alone=not self._running, consent=_asked(asked))
            raise
        except asyncio.CancelledError:
            elapsed = _ms(started)
            log.info("call %s %s %s:%s cancelled after %.1f ms", *where, elapsed)
            self._recorder.cancelled(pending, elapsed)
            raise
        except Exception as exc:
            log.exception("call %s %s %s:%s crashed", *where)
            failure = AutomationFailed(f"the gateway failed unexpectedly ({type(exc).__name__}); see its log")
            await self._recorder.failed(pending, failure, _ms(started))
            raise failure from exc
        elapsed = _ms(started)
        _after_answer("call %s %s %s:%s ok in %.1f ms", *where, elapsed)
        await self._recorder.ok(pending, result, elapsed, alone=not self._running, consent=_asked(asked))
        return result

    def recorded_arguments(self, app_id: str, tool_name: str, args: Any) -> Any:
        """A call's arguments as its history record holds them: secrets redacted, long strings shortened."""
        return self._recorder.arguments(printable(app_id), printable(tool_name), args)

    def known(self, app_id: str, tool_name: str) -> bool:
        """Whether the app (and the tool, unless "") is one the gateway serves."""
        try:
            app = self.app(app_id)
            if tool_name:
                self._find_tool(app, app_id, tool_name)
        except AaiError:
            return False
        return True

    async def _counted(self, running: Awaitable[Any]) -> Any:
        """`running` awaited, counted among the calls under way while it runs."""
        self._running += 1
        try:
            return await running
        finally:
            self._running -= 1

    async def _resolve(self, app_id: str) -> Descriptor:
        """`app`, or, for an http(s) URL not discovered yet in this run, web:discover of it (cache first)."""
        try:
            return self.app(app_id)
        except AppNotFound:
            if not app_id.strip().lower().startswith(("https://", "http://")):
                raise
        return await self.discover(app_id)

    @cached_property
    def consent(self) -> ConsentGate:
        """Consent decisions, rules and pending requests (the CLI and the web UI use it too)."""
        return ConsentGate(self.settings)

    @cached_property
    def launches(self) -> LaunchGate:
        """The user's yes to the programs of MCP servers from a store or URL, asked for before they start."""
        from aai_gateway.library.install import approval_source  # noqa: PLC0415 (the library loads when an MCP app is used)

        return LaunchGate(
            self.consent.store, partial(approval_source, self.settings.aai_home), lambda: self.consent.ui_url
        )

    async def _call(
        self,
        app_id: str,
        tool_name: str,
        args: Mapping[str, Any],
        caller: Caller,
        late: float = 0.0,
        *,
        asked: Callable[[str], None] | None = None,
    ) -> Any:
        _check_text(app_id, tool_name, args)
        if self.settings.require_history and (trouble := self.history.trouble()) is not None:
            raise AutomationFailed(
                f"refused: requireHistory is set and {trouble.describe()}; calls are taken again once it can be written"
            )
        app, binding, tool = self._find_tool(await self.live(await self._resolve(app_id)), app_id, tool_name)
        if not isinstance(args, Mapping):
            raise InvalidParams(f"args must be an object of named arguments, got {type(args).__name__}")
        await self._check_args(tool, args)
        site = self.web_apps.site_of(app)  # a discovered web app is known by its site, not the id it claims
        await self.consent.check(
            caller.name,
            app,
            tool,
            args,
            app_key=site.origin if site else app.app_id,
            trusted=caller.transport == "cli",
            ask=caller.ask,
            transport=caller.transport,
            marks_trusted=site is None,  # a website's own read-only marks never skip a question
            asked=asked,
        )
        executor = self._executor(binding)
        if self.telemetry is not None:  # traced for this run only: the gateway keeps the executor as it is
            executor = self.telemetry.executor(executor)
        app_settings = self.settings.apps.get(app.app_id)
        # the user's word for this app first, then the descriptor's for this tool, then the user's default
        timeout = (app_settings.timeout if app_settings else None) or tool.timeout or self.settings.default_timeout
        late = max(late, 0.0)
        if late:  # the request waited for the gateway to start: its timeout began when it arrived
            if late >= timeout:
                raise Timeout(
                    f"{app.app_id} was not called: the gateway took {late:.3g} s to start (timeout {timeout:g} s)"
                )
            timeout -= late
        # the app's own share first, so calls queued for a saturated app hold none of the gateway's slots
        async with self._app_share(app.app_id), self._slots:
            if not late:
                return await executor.execute(ToolCall(app, binding, tool, args, timeout, caller.relay))
            try:
                return await executor.execute(ToolCall(app, binding, tool, args, timeout, caller.relay))
            except Timeout as exc:
                waited = f"the call waited {late:.3g} s for the gateway to start; its timeout is {timeout + late:g} s"
                raise Timeout(f"{exc.detail} ({waited})") from None

    def _app_share(self, app_id: str) -> asyncio.Semaphore:
        """The slots one app may hold at once: `apps.<id>.maxConcurrentCalls`, else `maxCallsPerApp`."""
        share = self._app_slots.get(app_id)
        if share is None:
            own = self.settings.apps.get(app_id)
            limit = (own.max_concurrent_calls if own else None) or self.settings.max_calls_per_app
            share = self._app_slots[app_id] = asyncio.Semaphore(min(limit, self.settings.max_concurrent_calls))
        return share

    async def batch(
        self, calls: Sequence[Any], caller: Caller, *, parallel: bool = True, stop_on_error: bool = False
    ) -> dict[str, Any]:
        """aai:batch: run `{app, tool, args}` calls, each as `call` runs one, and report on each in order.

        In parallel up to maxConcurrentCalls at a time, or one after another. A failed call fails alone;
        with `stop_on_error` the calls not started yet are skipped and those running finish. A malformed
        entry is that entry's INVALID_PARAMS (not recorded, as aai:exec's own arguments are not). The user
        is asked at most once per app and tool of the batch, and the answer serves all of its calls.
        """
        if not 1 <= len(calls) <= MAX_BATCH:
            raise InvalidParams(f"calls must hold 1 to {MAX_BATCH} calls, got {len(calls)}")
        started = time.perf_counter()
        entries: list[BatchEntry | AaiError] = [_batch_entry(i, raw) for i, raw in enumerate(calls)]
        if caller.ask is not None:
            caller = replace(caller, ask=_ask_once(caller.ask, entries, self.spelling.batch))
        reports: list[dict[str, Any]] = [{}] * len(entries)
        stopped = False
        slots = asyncio.Semaphore(self.settings.max_concurrent_calls)

        async def run(index: int) -> None:
            nonlocal stopped
            entry = entries[index]
            if stopped:
                reports[index] = _batch_report(entry, "skipped")
                return
            begun = time.perf_counter()
            failure = entry if isinstance(entry, AaiError) else None
            if isinstance(entry, BatchEntry):
                try:
                    result = await self.call(entry.app, entry.tool, entry.args, caller)
                except AaiError as exc:
                    failure = exc
            if failure is None:
                reports[index] = _batch_report(entry, "ok", _ms(begun), result=result)
                return
            stopped = stopped or stop_on_error
            error = {"code": failure.code, "type": failure.type, "detail": failure.detail}
            reports[index] = _batch_report(entry, "error", _ms(begun), error=error)

        async def slotted(index: int) -> None:
            async with slots:
                await run(index)

        if parallel:
            await asyncio.gather(*(slotted(i) for i in range(len(entries))))
        else:
            for index in range(len(entries)):
                await run(index)
        counts = {status: sum(r["status"] == status for r in reports) for status in ("ok", "error", "skipped")}
        return {"results": reports, **counts, "durationMs": round(_ms(started), 3)}

    async def _check_args(self, tool: Tool, args: Mapping[str, Any]) -> None:
        check = self._validators.get(id(tool))
        if check is None:
            check = self._validators[id(tool)] = ArgumentCheck(tool.name, tool.parameters)
        await check.run(args)

    def _executor(self, binding: Binding) -> Executor:
        """One executor per backend, shared by every automation type it serves (one DBus connection)."""
        backend = executors.BACKENDS.get(binding.automation)
        executor = self._executors.get(backend) if backend else None
        if executor is None:
            created = executors.create(binding.automation, self.settings)
            if created is None or backend is None:
                why = executors.WHY_NOT.get(binding.automation) or (
                    f"this gateway has no executor for '{binding.automation}' automation"
                )
                raise AutomationNotSupported(f"{why} (platform {binding.platform})")
            executor = self._executors[backend] = created
            if isinstance(executor, ListsTools):
                executor.tools_changed = self._tools_changed
                executor.approve = self.launches.require
        return executor

    async def aclose(self) -> None:
        self._live.clear()
        closing, self._executors = list(self._executors.values()), {}
        await asyncio.gather(*(e.aclose() for e in closing), return_exceptions=True)
        await self.history.aclose()
        telemetry, self.telemetry = self.telemetry, None
        if telemetry is not None:
            await telemetry.aclose()

    def _unknown_app(self, app_id: str) -> str:
        ids = [a.app_id for a in self.apps()]
        close = difflib.get_close_matches(app_id, ids, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        known = self.registry.scan.apps.get(app_id)
        if known is not None:
            return f"{app_id} has no binding for {self.platform} or web (it has {', '.join(known.bindings)})."
        web = "" if hint else f" For a web app, call {self.spelling.discover} with its domain or URL first."
        return f"no app '{app_id}' is installed; known apps: {', '.join(ids) or 'none'}.{hint}{web}"


@dataclass(frozen=True, slots=True)
class BatchEntry:
    app: str
    tool: str
    args: Mapping[str, Any]


def _batch_entry(index: int, raw: Any) -> BatchEntry | AaiError:
    where = f"calls[{index}]"
    if not isinstance(raw, Mapping):
        return InvalidParams(f"{where} must be an object {{app, tool, args}}, got {type(raw).__name__}")
    app, tool, args = raw.get("app"), raw.get("tool"), raw.get("args")
    if not isinstance(app, str) or not app:
        return InvalidParams(f"{where}.app must be a non-empty string (an app id)")
    if not isinstance(tool, str) or not tool:
        return InvalidParams(f"{where}.tool must be a non-empty string (an operation name from the guide)")
    if args is not None and not isinstance(args, Mapping):
        return InvalidParams(f"{where}.args must be an object of named arguments, got {type(args).__name__}")
    extra = sorted(set(raw) - {"app", "tool", "args"})
    if extra:
        return InvalidParams(
            f"{where} has unknown keys {', '.join(printable(str(k)) for k in extra)}; it takes app, tool and args"
        )
    return BatchEntry(app, tool, args or {})


def _batch_report(entry: BatchEntry | AaiError, status: str, duration_ms: float = 0.0, **more: Any) -> dict[str, Any]:
    report: dict[str, Any] = (
        {"app": printable(entry.app), "tool": printable(entry.tool)} if isinstance(entry, BatchEntry) else {}
    )
    report["status"] = status
    if status != "skipped":
        report["durationMs"] = round(duration_ms, 3)
    return report | more


def _ask_once(ask: Ask, entries: Sequence[BatchEntry | AaiError], batch_name: str) -> Ask:
    """The batch's asker: one question per app and tool, whose answer every call of that tool awaits."""
    answers: dict[tuple[str, str], asyncio.Task[Answer | None]] = {}
    shared: dict[tuple[str, str], int] = {}
    for entry in entries:
        if isinstance(entry, BatchEntry):
            shared[entry.app, entry.tool] = shared.get((entry.app, entry.tool), 0) + 1

    async def once(question: Question) -> Answer | None:
        key = (question.app, question.tool)
        if key not in answers:
            count = shared.get(key, 1)
            if count > 1:
                note = (batch_name, f"this answer applies to all {count} calls of {question.tool} in the batch")
                question = replace(question, arguments=(*question.arguments, note))
            answers[key] = asyncio.ensure_future(ask(question))
        return await answers[key]

    return once


def _fingerprints(apps: list[Descriptor]) -> dict[str, str]:
    return {a.app_id: json.dumps(a.to_json(), sort_keys=True, ensure_ascii=False) for a in apps}


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
    if log.isEnabledFor(logging.INFO):
        asyncio.get_running_loop().call_soon(partial(log.info, message, *args))


def _asked(outcomes: list[str]) -> str | None:
    """How the call's consent question ended: the first outcome (a call let through after a wait is checked again)."""
    return outcomes[0] if outcomes else None


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000

"""The gateway: find the app → find the tool → check the arguments → run it with its executor.

Transports (MCP over stdio or HTTP, the command line) call this and only this; it knows nothing of
any protocol, and raises only `AaiError`s for an agent to see.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping, Sequence
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

from aai_gateway.calls import Apps, AppsChanged, Caller, Calls, Servers
from aai_gateway.config import Settings
from aai_gateway.consent import ConsentGate
from aai_gateway.consent.launches import LaunchGate, asked_by
from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.discovery import Registry
from aai_gateway.discovery.webapps import WebApps
from aai_gateway.errors import AaiError, AutomationFailed, InvalidParams
from aai_gateway.executors import Forwarded as Forwarded  # noqa: PLC0414 (re-exported: what the MCP layer passes on)
from aai_gateway.history import HISTORY_FILE, HistoryStore
from aai_gateway.history.record import RUN_APP as WORKFLOWS_APP
from aai_gateway.spelling import Spelling
from aai_gateway.workflows.saved import Shelf
from aai_gateway.workflows.schema import MAX_BATCH as MAX_BATCH  # noqa: PLC0414 (re-exported for the MCP layer)

if TYPE_CHECKING:
    from aai_gateway.events.hub import Events
    from aai_gateway.search.finder import Finder
    from aai_gateway.telemetry.otel import Telemetry
    from aai_gateway.workflows.approvals import Approvals
    from aai_gateway.workflows.triggers import Triggers

__all__ = ["MAX_BATCH", "Caller", "Forwarded", "Gateway"]

log = logging.getLogger("aai_gateway.calls")


class Gateway:
    """What the transports call: the apps, the calls, batches, search and install, as one object.

    Each job is its own part: `apps` (finding an app and its tool), `servers` (executors and the MCP
    servers served as apps), `calls` (one call, start to end); batches and plans are in `workflows`.
    """

    def __init__(
        self, settings: Settings, registry: Registry | None = None, history: HistoryStore | None = None
    ) -> None:
        self.settings = settings
        if history is None:
            history = HistoryStore(settings.aai_home / HISTORY_FILE, settings.history_retention_days)
        self.history = history
        self.lookup = Apps(settings, registry)
        self.servers = Servers(settings, lambda: self.launches)
        self.servers.remembered = self._tools_remembered
        self.calls = Calls(settings, self.lookup, self.servers, history, self.consent)
        self.shelf = Shelf(settings.workflows_dir)
        """The saved workflows, served as the app aai.workflows."""
        self.shelf.load()

    @property
    def registry(self) -> Registry:
        return self.lookup.registry

    @property
    def web_apps(self) -> WebApps:
        return self.lookup.web_apps

    @property
    def telemetry(self) -> Telemetry | None:
        """Spans and metrics of the calls, or None when not configured (then nothing of it is loaded)."""
        return self.calls.telemetry

    @telemetry.setter
    def telemetry(self, telemetry: Telemetry | None) -> None:
        self.calls.telemetry = telemetry

    @property
    def listeners(self) -> list[AppsChanged]:
        """Told the ids of apps whose tools changed without a rescan (an MCP server's list changed)."""
        return self.servers.listeners

    @property
    def platform(self) -> str:
        return self.settings.platform

    @property
    def spelling(self) -> Spelling:
        """The gateway's own tools as they are listed, for every text an agent reads."""
        return self.lookup.spelling

    def apps(self) -> list[Descriptor]:
        workflows = self.shelf.app(self.platform)
        served = self.lookup.served()
        return served if workflows is None else [*served, workflows]

    def rescan(self) -> set[str]:
        """Scan again; return the ids of apps added, changed or removed (what clients must be told)."""
        changed, served = self.lookup.rescan()
        self.calls.forget()
        self.servers.forget()
        if changed - served:
            self.servers.stop_unserved(served)
        if self.shelf.load():
            changed.add(WORKFLOWS_APP)
        return changed

    async def discover(self, url: str) -> Descriptor:
        return await self.lookup.discover(url)

    def app(self, app_id: str) -> Descriptor:
        if app_id == WORKFLOWS_APP and (workflows := self.shelf.app(self.platform)) is not None:
            return workflows
        return self.lookup.app(app_id)

    def guide(self, app_id: str) -> str:
        return self.guide_of(self.app(app_id))

    def guide_of(self, app: Descriptor) -> str:
        return self.lookup.guide_of(app)

    async def guide_live(self, app_id: str, caller: Caller | None = None) -> str:
        """`guide`, for an MCP server's app with the tools the server lists (started if need be)."""
        caller = caller or Caller(name="cli", transport="cli")
        return self.guide_of(await asked_by(caller.name, caller.ask, self.live(self.app(app_id))))

    async def live(self, app: Descriptor) -> Descriptor:
        if app.app_id == WORKFLOWS_APP:
            return app
        return await self.servers.live(app)

    def server_statuses(self) -> list[Any]:
        return self.servers.statuses()

    def find(self, app_id: str, tool_name: str) -> tuple[Descriptor, Binding, Tool]:
        return self.lookup.tool(self.app(app_id), app_id, tool_name)

    def known(self, app_id: str, tool_name: str) -> bool:
        if app_id == WORKFLOWS_APP:
            return not tool_name or self.shelf.get(tool_name) is not None
        return self.lookup.known(app_id, tool_name)

    def recorded_arguments(self, app_id: str, tool_name: str, args: Any) -> Any:
        return self.calls.recorded_arguments(app_id, tool_name, args)

    def call(
        self, app_id: str, tool_name: str, args: Mapping[str, Any] | None, caller: Caller
    ) -> Coroutine[Any, Any, Any]:
        """One tool of one app; a tool of aai.workflows runs that saved workflow. (The call itself is handed
        back to await, not awaited here: a coroutine less between the caller and the app on every call.)"""
        if app_id != WORKFLOWS_APP or self.shelf.app(self.platform) is None:
            return self.calls.call(app_id, tool_name, args, caller)
        return self.run_workflow(tool_name, {} if args is None else args, caller)

    async def run_workflow(self, workflow_id: str, args: Mapping[str, Any], caller: Caller) -> Any:
        """A saved workflow run; its report, or AUTOMATION_FAILED saying how each step ended."""
        saved = self.shelf.get(workflow_id)
        if saved is None:
            self.lookup.tool(self.app(WORKFLOWS_APP), WORKFLOWS_APP, workflow_id)  # raises, naming those there are
            raise AssertionError(workflow_id)
        if not isinstance(args, Mapping):
            raise InvalidParams(f"args must be an object of the workflow's inputs, got {type(args).__name__}")
        from aai_gateway.workflows.run import run_saved, text  # noqa: PLC0415 (the plan engine loads when used)

        report = await run_saved(saved, args, self.calls, caller)
        if report.status != "ok":
            raise AutomationFailed(f"workflow {workflow_id}: {text(report)}")
        return report.to_json()

    async def batch(
        self, calls: Sequence[Any], caller: Caller, *, parallel: bool = True, stop_on_error: bool = False
    ) -> dict[str, Any]:
        from aai_gateway.workflows.batch import batch  # noqa: PLC0415 (the plan engine loads when used)

        return await batch(self.calls, calls, caller, parallel=parallel, stop_on_error=stop_on_error)

    async def run(self, plan: Any, caller: Caller) -> tuple[str, dict[str, Any], bool]:
        """aai:run: a plan run whole; its answer as text for the model, as structured content, and whether it
        failed. With `saveAs`, a plan that ran through is kept as a saved workflow once the user agrees."""
        from aai_gateway.workflows import saving  # noqa: PLC0415 (the plan engine loads when used)
        from aai_gateway.workflows.run import run_plan, text  # noqa: PLC0415

        wanted = None
        if isinstance(plan, Mapping) and "saveAs" in plan:
            plan = dict(plan)
            wanted = saving.wish(plan.pop("saveAs"), self.shelf)
        report = await run_plan(plan, self.calls, caller)
        answer, said = report.to_json(), text(report)
        if wanted is not None:
            saved = answer["saved"] = await saving.save(wanted, plan, report, self.shelf, caller)
            if saved["status"] == "saved":
                said += f"\nSaved as the workflow {saved['id']}: run it with {self.spelling.exec} " + (
                    f'{{app: "{WORKFLOWS_APP}", tool: "{saved["id"]}", args}}.'
                )
                await self.servers.tell({WORKFLOWS_APP})
            else:
                said += f"\nNot saved: {saved['why']}."
        return said, answer, report.status != "ok"

    async def wait(self, arguments: Mapping[str, Any], caller: Caller) -> tuple[str, dict[str, Any]]:
        """aai:wait: the first matching occurrence of an app's event, or word that none came in time."""
        from aai_gateway.events import wait  # noqa: PLC0415 (events load with the first wait)

        answer = await wait.wait(self.events, self.calls, arguments, caller, self.spelling.wait)
        return wait.text(answer), answer

    @cached_property
    def events(self) -> Events:
        """The event sources, shared by every waiter."""
        from aai_gateway.events.hub import Events  # noqa: PLC0415

        return Events(self.calls)

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
        await self.servers.tell(self.rescan() | {found.app.app_id})
        log.info("%s installed %s from %s", caller.name, found.app.app_id, found.source)
        return f"Installed {found.app.name} ({found.app.app_id}) from {found.source}.\n\n{self.guide(found.app.app_id)}"

    @cached_property
    def finder(self) -> Finder:
        """The search over installed apps, web apps found before, the library and the stores."""
        from aai_gateway.search.finder import Finder  # noqa: PLC0415 (search loads at the first search)

        def web() -> list[tuple[str, Descriptor]]:
            return [(found.site.origin, found.descriptor) for found in self.web_apps.all()]

        return Finder(self.settings, apps=self.apps, web_apps=web, history=self.history)

    def _tools_remembered(self) -> None:
        if "finder" in self.__dict__:
            self.finder.changed()

    @cached_property
    def approvals(self) -> Approvals:
        """The user's approvals of triggered workflows (`aai-gateway workflow approve`)."""
        from aai_gateway.workflows.approvals import Approvals  # noqa: PLC0415 (used by triggers and the CLI only)

        return Approvals(self.settings.aai_home)

    def triggers(self) -> Triggers:
        """The triggers of the approved saved workflows, for a long-lived gateway to run (`Triggers.run`)."""
        from aai_gateway.workflows.triggers import Triggers  # noqa: PLC0415 (only a long-lived gateway runs them)

        return Triggers(
            self.shelf, self.approvals, self.calls, events=lambda: self.events, app=self.app, find=self.static_tool
        )

    def static_tool(self, app_id: str, tool_name: str) -> Tool | None:
        """An app's tool as its descriptor says it (an MCP server's are not asked for), if it has one."""
        try:
            found = self.app(app_id).find_tool(self.platform, tool_name)
        except AaiError:
            return None
        return found[1] if found is not None else None

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

    async def aclose(self) -> None:
        if "events" in self.__dict__:
            await self.events.aclose()
        await self.servers.aclose()
        await self.history.aclose()
        await self.calls.aclose()

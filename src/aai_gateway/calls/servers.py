"""The executors, one per backend, and the MCP servers served as apps: their live tool lists, kept on
disk for searches, and the notices sent when they change."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from aai_gateway import executors
from aai_gateway.calls.caller import AppsChanged
from aai_gateway.config import Settings
from aai_gateway.consent.launches import LaunchGate
from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.errors import AutomationNotSupported
from aai_gateway.executors import Executor, ListsTools

CHANGES_SETTLE = 0.05
"""Seconds an MCP server's tool-list changes are gathered before clients are told once."""


class Servers:
    def __init__(self, settings: Settings, launches: Callable[[], LaunchGate]) -> None:
        self.settings = settings
        self._launches = launches
        self._executors: dict[str, Executor] = {}
        self._live: dict[str, tuple[Descriptor, Descriptor]] = {}
        """An MCP server's app with the server's tools, by app id: (the descriptor read, the one served)."""
        self.listeners: list[AppsChanged] = []
        """Told the ids of apps whose tools changed without a rescan (an MCP server's list changed)."""
        self.remembered: Callable[[], None] | None = None
        """Called when a server's tools kept on disk changed (the search index reads them)."""
        self._notices: set[asyncio.Task[None]] = set()
        self._changing: set[str] = set()
        """Apps whose tools changed since the last notice, while one is on its way."""

    def executor(self, binding: Binding) -> Executor:
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
                executor.approve = self._launches().require
        return executor

    async def live(self, app: Descriptor) -> Descriptor:
        """`app` as served: an MCP server's app gets the server's tools (`tools/list`, kept until it changes) and
        the events its capabilities offer (`descriptor.server_events`) besides the ones it declares."""
        binding = app.mcp
        if binding is None:
            return app
        known = self._live.get(app.app_id)
        if known is not None and known[0] is app:
            return known[1]
        executor = self.executor(binding)
        assert isinstance(executor, ListsTools), binding.automation
        own = self.settings.apps.get(app.app_id)
        timeout = (own.timeout if own else None) or self.settings.default_timeout
        tools = await executor.live_tools(app, binding, timeout)
        bindings = {**app.bindings, "mcp": replace(binding, tools=tools)}
        served = replace(app, bindings=bindings, events=executor.live_events(app))
        self._live[app.app_id] = (app, served)
        await self._remember_tools(app, tools)
        return served

    def served(self, app_id: str) -> Descriptor | None:
        """An MCP server's app with the tools its server listed last, if it has been listed."""
        known = self._live.get(app_id)
        return known[1] if known is not None else None

    def forget(self) -> None:
        """List every server's tools again on next use (the descriptors were read again)."""
        self._live.clear()

    async def _remember_tools(self, app: Descriptor, tools: tuple[Tool, ...]) -> None:
        """Keep an MCP server's tools on disk, for searches that must not start it."""
        from aai_gateway.search import server_tools  # noqa: PLC0415 (search loads when used)

        changed = await asyncio.to_thread(server_tools.remember, self.settings.cache_dir, app, tools)
        if changed and self.remembered is not None:
            self.remembered()

    def stop_unserved(self, served: set[str]) -> None:
        """Stop the servers of apps a rescan removed (an MCP server's process), in the background."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop: a one-shot command, whose exit stops everything
            return
        for executor in list(self._executors.values()):
            if isinstance(executor, ListsTools):
                self._keep(loop.create_task(executor.retain(served)))

    def _keep(self, task: asyncio.Task[None]) -> None:
        self._notices.add(task)
        task.add_done_callback(self._notices.discard)

    def _tools_changed(self, app_id: str) -> None:
        """An MCP server's tools changed: list them again on next use, and tell every listener once for a
        burst of changes (a server may say so several times as it starts)."""
        self._live.pop(app_id, None)
        if self._changing:  # a notice is on its way and will name this app too
            self._changing.add(app_id)
            return
        self._changing = {app_id}
        self._keep(asyncio.ensure_future(self._tell_changed()))

    async def _tell_changed(self) -> None:
        await asyncio.sleep(CHANGES_SETTLE)
        changed, self._changing = self._changing, set()
        await self.tell(changed)

    async def tell(self, changed: set[str]) -> None:
        """Tell every listener that these apps changed."""
        for listener in self.listeners:
            await listener(changed)

    def statuses(self) -> list[Any]:
        """How each MCP server served as an app is doing (state, pid, restarts, last failure)."""
        executor = self._executors.get(executors.BACKENDS["mcp"])
        return list(executor.statuses()) if isinstance(executor, ListsTools) else []

    async def aclose(self) -> None:
        self._live.clear()
        closing, self._executors = list(self._executors.values()), {}
        await asyncio.gather(*(e.aclose() for e in closing), return_exceptions=True)

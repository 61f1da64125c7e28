"""Where operations come from: installed apps (an MCP server's from its last tool list), web apps found
before, and the library's and stores' entries that are not installed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from aai_gateway.descriptor import Descriptor, Tool
from aai_gateway.descriptor.validate import check_bytes
from aai_gateway.discovery import webcache
from aai_gateway.library.entries import Entry
from aai_gateway.library.presence import Found
from aai_gateway.search.documents import Operation
from aai_gateway.search.server_tools import recall

UNKNOWN = "not known to be on this machine"


def installed(apps: Iterable[Descriptor], platform: str, cache_dir: Path) -> list[Operation]:
    """Every tool the installed apps serve on `platform`; an MCP server's from its last list on disk."""
    found: list[Operation] = []
    for app in apps:
        tools: Iterable[Tool] = [tool for _, tool in app.tools(platform)]
        if app.mcp is not None and not app.mcp.tools:
            tools = recall(cache_dir, app) or ()
        found.extend(_operations(app, tools, source="installed", installed=True))
    return found


def web(apps: Iterable[tuple[str, Descriptor]]) -> list[Operation]:
    """The tools of web apps discovered before (`web_discover`), named by their site's origin."""
    found: list[Operation] = []
    for origin, app in apps:
        binding = app.bindings.get("web")
        tools = binding.tools if binding else ()
        found.extend(_operations(app, tools, source="installed", installed=True, app_id=origin))
    return found


def cached_web(cache_dir: Path, max_bytes: int, known: set[str]) -> list[tuple[str, Descriptor]]:
    """Web apps discovered before, by this gateway or another run, from the `.well-known` cache; by origin.
    Those in `known` (found in this run) are left out. Searching shows them; running one discovers it
    again, with every check that entails."""
    found = []
    for site, entry in webcache.every(cache_dir, max_bytes):
        if site.origin in known:
            continue
        loaded = check_bytes(entry.data, site.well_known_url)
        if loaded.descriptor is not None and "web" in loaded.descriptor.bindings:
            found.append((site.origin, loaded.descriptor))
    return found


def library(entries: Iterable[Entry], installed_ids: set[str]) -> list[Operation]:
    """The tools of library and store entries that are not installed (whether each app is on this machine
    is said by `on_this_machine`, asked apart and more often).

    A bundled entry's tools come from its descriptor; a store's index names only its tools, so those
    carry no parameters until installed."""
    found: list[Operation] = []
    for entry in entries:
        if entry.app_id in installed_ids:
            continue
        app = entry.descriptor or Descriptor(
            entry.app_id, entry.names, entry.description, {}, "camel", aliases=entry.aliases, version=entry.version
        )
        tools: Iterable[Tool] = (
            [t for b in entry.descriptor.bindings.values() for t in b.tools]
            if entry.descriptor is not None
            else [Tool(name, "", {}) for name in entry.tools]
        )
        source = "library" if entry.bundled else entry.source
        found.extend(
            _operations(app, tools, source=source, installed=False, runnable=False, why_not=UNKNOWN, context=entry.why)
        )
    return found


def on_this_machine(operation: Operation, presence: Mapping[str, Found]) -> Operation:
    """An entry's operation with whether its app is on this machine (installed operations as they are)."""
    if operation.installed:
        return operation
    here = presence.get(operation.app_id)
    if here is not None and here.state == "yes":
        return replace(operation, runnable=True, why_not="")
    if here is not None and here.state == "no":
        return replace(operation, runnable=False, why_not="the app is not on this machine")
    return operation


def _operations(
    app: Descriptor,
    tools: Iterable[Tool],
    *,
    source: str,
    installed: bool,
    runnable: bool = True,
    why_not: str = "",
    context: str = "",
    app_id: str | None = None,
) -> list[Operation]:
    seen: set[str] = set()
    found = []
    for tool in tools:
        if tool.name in seen:
            continue
        seen.add(tool.name)
        found.append(
            Operation(
                app_id=app_id or app.app_id,
                app_name=app.name,
                tool=tool.name,
                description=tool.description,
                parameters=tool.parameters,
                annotations=tool.annotations.to_json(),
                source=source,
                installed=installed,
                runnable=runnable,
                why_not=why_not,
                app_names=[n.text for n in app.names],
                aliases=app.aliases,
                tool_aliases=tool.aliases,
                app_description=app.description,
                context=context,
            )
        )
    return found

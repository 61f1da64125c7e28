"""Which installed descriptors the library or a store offers in a newer version, and updating them.

Nothing here runs by itself: a package upgrade that brings newer bundled entries leaves the installed
copies as they are until `aai-gateway update` (or the UI's Update button) is used. An update writes
through `install`, so it is atomic, and a file the user edited is replaced only with `force` (a copy
kept as install keeps it).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from aai_gateway.descriptor import Descriptor, Tool
from aai_gateway.errors import AaiJsonInvalid
from aai_gateway.library.entries import Catalog, Entry
from aai_gateway.library.install import Installed, check, install, obtain, read_records
from aai_gateway.library.store import Fetch, version_key

DESCRIPTOR = "aai.json"


@dataclass(frozen=True, slots=True)
class Outdated:
    """An installed app whose library or store entry has a newer version."""

    entry: Entry
    installed: str
    """The installed copy's version ("?" when it says none)."""

    @property
    def app_id(self) -> str:
        return self.entry.app_id


@dataclass(frozen=True, slots=True)
class Changes:
    """The tools an update added, changed (description, parameters, annotations...) and removed, by name."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        said = [
            f"  {what}: {', '.join(names)}"
            for what, names in (("added", self.added), ("changed", self.changed), ("removed", self.removed))
            if names
        ]
        return said or ["  no tool was added, changed or removed"]


@dataclass(frozen=True, slots=True)
class Updated:
    done: Installed
    before: str
    changes: Changes


def installed_copy(aai_home: Path, app_id: str) -> Descriptor | None:
    """The descriptor installed as `<aai_home>/<app_id>/aai.json`, or None when there is none or it is invalid."""
    try:
        data = (aai_home / app_id / DESCRIPTOR).read_bytes()
        return check(data, str(aai_home / app_id / DESCRIPTOR))[0]
    except (OSError, AaiJsonInvalid):
        return None


def installed_version(aai_home: Path, app_id: str, records: dict[str, dict[str, object]]) -> str | None:
    """The version of the installed copy (what its file says, else what install recorded); None if not installed."""
    if not (aai_home / app_id / DESCRIPTOR).is_file():
        return None
    app = installed_copy(aai_home, app_id)
    if app is not None and app.version:
        return app.version
    recorded = records.get(app_id, {}).get("version")
    return str(recorded) if recorded else "?"


def outdated(catalog: Catalog, aai_home: Path) -> list[Outdated]:
    """The installed apps the catalog offers in a newer version, by id."""
    records = read_records(aai_home)
    found = []
    for entry in sorted(catalog.entries, key=lambda e: e.app_id):
        version = installed_version(aai_home, entry.app_id, records)
        if version is not None and version_key(entry.version) > version_key(version):
            found.append(Outdated(entry, version))
    return found


def tool_changes(before: Descriptor | None, after: Descriptor) -> Changes:
    """What changed between two versions' tools (every platform's), by tool name."""
    old, new = _tools(before), _tools(after)
    return Changes(
        added=tuple(sorted(new.keys() - old.keys())),
        changed=tuple(sorted(n for n in new.keys() & old.keys() if new[n] != old[n])),
        removed=tuple(sorted(old.keys() - new.keys())),
    )


def _tools(app: Descriptor | None) -> dict[str, tuple[Tool, ...]]:
    found: dict[str, tuple[Tool, ...]] = {}
    if app is not None:
        for binding in app.bindings.values():
            for tool in binding.tools:
                found[tool.name] = (*found.get(tool.name, ()), tool)
    return found


async def update(
    item: Outdated, catalog: Catalog, fetch: Fetch, aai_home: Path, max_bytes: int, *, force: bool = False
) -> Updated:
    """Fetch and install the newer version of one app; raises as `obtain` and `install` do (EditedFile included)."""
    before = await asyncio.to_thread(installed_copy, aai_home, item.app_id)
    data, source = await obtain(item.app_id, catalog, fetch, max_bytes)
    done = await asyncio.to_thread(install, data, source, aai_home, force=force)
    return Updated(done, item.installed, tool_changes(before, done.app))

"""Library entries: the bundled ones read from `apps/<appId>/`, each checked, and the store's alike.

A bundled entry is two files: `aai.json`, checked as every descriptor is (its appId must be the folder's
name), and `entry.json`, checked against `entry.schema.json`. An entry with a problem is left out and
the problem reported; loading never raises for what a file holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

from jsonschema import Draft7Validator

from aai_gateway.descriptor import Descriptor, Name
from aai_gateway.descriptor.validate import check_bytes
from aai_gateway.executors.script_checks import with_script_checks
from aai_gateway.problems import Problem, describe, pointer

BUNDLED = "bundled"
"""The `source` of an entry shipped with the package (a store's entries carry the store's index URL)."""
DESCRIPTOR = "aai.json"
ENTRY = "entry.json"
MAX_ENTRY_BYTES = 64 * 1024
MAX_DESCRIPTOR_BYTES = 1024 * 1024
Level = Literal["run", "interface"]
OTHER = "Other"
"""The category of an entry that names none."""


@dataclass(frozen=True, slots=True)
class Presence:
    """How to tell the app is on this machine: a bus name (exact, or a prefix ending in `*`), or a command."""

    bus: str = "session"
    bus_names: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"bus": self.bus, "busNames": list(self.bus_names), "commands": list(self.commands)}


@dataclass(frozen=True, slots=True)
class Verified:
    level: Level
    test: str = ""
    against: str = ""
    how: str = ""

    def to_json(self) -> dict[str, str]:
        given = {"level": self.level, "test": self.test, "against": self.against, "how": self.how}
        return {k: v for k, v in given.items() if v}


@dataclass(frozen=True, slots=True)
class Rating:
    """What a store's users think of an entry: shown, never used to decide anything."""

    average: float
    count: int

    def text(self) -> str:
        return f"rated {self.average:.1f} of 5 by {self.count} {'person' if self.count == 1 else 'people'}"

    def to_json(self) -> dict[str, float | int]:
        return {"average": self.average, "count": self.count}


@dataclass(frozen=True, slots=True)
class Entry:
    """One app the library or a store offers. A store's entry has no descriptor until it is fetched."""

    app_id: str
    names: tuple[Name, ...]
    description: str
    version: str
    source: str
    """BUNDLED, or the URL of the store index that lists it."""
    aliases: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    why: str = ""
    presence: Presence | None = None
    verified: Verified | None = None
    descriptor: Descriptor | None = field(default=None, compare=False, repr=False)
    data: bytes | None = field(default=None, compare=False, repr=False)
    """The descriptor's bytes as shipped (bundled entries)."""
    descriptor_url: str | None = None
    sha256: str | None = None
    store_name: str = ""
    category: str = OTHER
    rating: Rating | None = None
    reviews_url: str = ""

    @property
    def name(self) -> str:
        english = next((n.text for n in self.names if n.lang in ("en", None)), None)
        return english or (self.names[0].text if self.names else self.app_id)

    @property
    def bundled(self) -> bool:
        return self.source == BUNDLED

    @property
    def source_text(self) -> str:
        return "bundled" if self.bundled else f"store {self.store_name or self.source}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.app_id,
            "name": self.name,
            "names": names_json(self.names),
            "aliases": list(self.aliases),
            "description": self.description,
            "version": self.version,
            "tools": list(self.tools),
            "platforms": list(self.platforms),
            "why": self.why,
            "verified": self.verified.to_json() if self.verified else None,
            "presence": self.presence.to_json() if self.presence else None,
            "source": self.source,
            "category": self.category,
            "rating": self.rating.to_json() if self.rating else None,
            "reviewsUrl": self.reviews_url or None,
        }


@dataclass(frozen=True, slots=True)
class Catalog:
    entries: tuple[Entry, ...]
    problems: tuple[Problem, ...] = ()

    def get(self, app_id: str) -> Entry | None:
        return next((e for e in self.entries if e.app_id == app_id), None)


def names_json(names: Iterable[Name]) -> dict[str, str]:
    """Names by language tag; a name without one (pipe-separated names of shape B) counts as English first."""
    found: dict[str, str] = {}
    for index, name in enumerate(names):
        tag = name.lang or ("en" if index == 0 else f"x-{index}")
        found.setdefault(tag, name.text)
    return found


@cache
def entry_validator() -> Draft7Validator:
    schema = json.loads(files("aai_gateway.library").joinpath("entry.schema.json").read_text("utf-8"))
    return Draft7Validator(schema)


def apps_root() -> Traversable:
    return files("aai_gateway.library").joinpath("apps")


@cache
def bundled() -> Catalog:
    """The entries shipped with the package (read once per process)."""
    return load_folder(apps_root())


def load_folder(root: Traversable | Path) -> Catalog:
    entries: list[Entry] = []
    problems: list[Problem] = []
    try:
        folders = sorted((f for f in root.iterdir() if f.is_dir() and not f.name.startswith((".", "_"))), key=_name)
    except OSError as exc:
        return Catalog((), (Problem(str(root), "", f"cannot be listed: {exc.strerror or exc}"),))
    for folder in folders:
        entry, found = load_entry(folder)
        problems.extend(found)
        if entry is not None:
            entries.append(entry)
    return Catalog(tuple(entries), tuple(problems))


def _name(folder: Traversable) -> str:
    return folder.name


def load_entry(folder: Traversable | Path) -> tuple[Entry | None, list[Problem]]:
    """One entry folder, checked; None and the problems when it cannot be offered."""
    where = str(folder)
    raw_entry, problem = _read(folder, ENTRY, MAX_ENTRY_BYTES)
    data, descriptor_problem = _read(folder, DESCRIPTOR, MAX_DESCRIPTOR_BYTES)
    problems = [p for p in (problem, descriptor_problem) if p is not None]
    if raw_entry is None or data is None:
        return None, problems
    meta, found = check_entry(raw_entry, f"{where}/{ENTRY}")
    problems.extend(found)
    loaded = with_script_checks(check_bytes(data, f"{where}/{DESCRIPTOR}"))
    problems.extend(p for p in loaded.problems if p.severity == "error")
    app = loaded.descriptor
    if app is not None and app.app_id != folder.name:
        problems.append(
            Problem(f"{where}/{DESCRIPTOR}", "", f"its appId is {app.app_id!r}, not the folder's name {folder.name!r}")
        )
    if meta is None or app is None or problems:
        return None, problems
    entry = entry_of(app, data, presence=meta.presence, verified=meta.verified, why=meta.why)
    return replace(entry, category=meta.category), problems


def entry_of(
    app: Descriptor,
    data: bytes,
    *,
    presence: Presence | None,
    verified: Verified | None,
    why: str = "",
    source: str = BUNDLED,
) -> Entry:
    platforms = tuple(app.bindings)
    tools = tuple(dict.fromkeys(t.name for b in app.bindings.values() for t in b.tools))
    return Entry(
        app_id=app.app_id,
        names=app.names,
        description=app.description,
        version=app.version or "0",
        source=source,
        aliases=app.aliases,
        tools=tools,
        platforms=platforms,
        why=why,
        presence=presence,
        verified=verified,
        descriptor=app,
        data=data,
    )


@dataclass(frozen=True, slots=True)
class Meta:
    """What an entry.json says."""

    why: str
    presence: Presence
    verified: Verified
    category: str = OTHER


def check_entry(raw: bytes, source: str) -> tuple[Meta | None, list[Problem]]:
    """An entry.json's presence and verification, or None and why it is not one."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, [Problem(source, "", f"is not JSON: {exc}")]
    problems = [
        Problem(source, pointer(err.absolute_path), describe(err))
        for err in sorted(entry_validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    ]
    if problems:
        return None, problems
    meta = Meta(doc["why"], presence_of(doc["presence"]), verified_of(doc["verified"]), doc.get("category", OTHER))
    return meta, []


def presence_of(raw: Mapping[str, Any]) -> Presence:
    return Presence(
        bus=str(raw.get("bus", "session")),
        bus_names=tuple(raw.get("busNames", ())),
        commands=tuple(raw.get("commands", ())),
    )


def verified_of(raw: Mapping[str, Any]) -> Verified:
    level: Level = "run" if raw.get("level") == "run" else "interface"
    return Verified(level, str(raw.get("test", "")), str(raw.get("against", "")), str(raw.get("how", "")))


def _read(folder: Traversable | Path, name: str, limit: int) -> tuple[bytes | None, Problem | None]:
    path = folder.joinpath(name)
    source = f"{folder}/{name}"
    try:
        if not path.is_file():
            return None, Problem(source, "", "is missing: a library entry holds aai.json and entry.json")
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        return None, Problem(source, "", f"cannot be read: {exc.strerror or exc}")
    if len(data) > limit:
        return None, Problem(source, "", f"is over the {limit // 1024} KiB limit")
    return data, None

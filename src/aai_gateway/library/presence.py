"""Whether an entry's app is on this machine: a bus name connected or activatable, or a command on PATH.

Each bus an entry names is asked once (its names, never starting anything). An app whose bus cannot be
reached cannot run here, whatever commands are installed ("cannot"): every call would fail. The bus's
problem is kept apart (`Found.problem`) so that a listing says it once, not on every entry.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from aai_gateway.config import Settings
from aai_gateway.errors import AaiError
from aai_gateway.library.entries import Entry, Presence

if TYPE_CHECKING:
    from aai_gateway.executors.dbus_names import BusNames

State = Literal["yes", "no", "unknown", "cannot"]
ASK_TIMEOUT = 2.0


@dataclass(frozen=True, slots=True)
class Found:
    state: State
    why: str
    """What showed it ("running: org.mpris.MediaPlayer2.vlc", "command vlc"), or why it is not known."""
    running: bool = False
    problem: str = ""
    """For "cannot": what is wrong with the bus the app needs, the same for every entry on that bus."""

    def text(self) -> str:
        """The verdict in words, for a listing that says each bus problem once on its own."""
        if self.state == "cannot":
            return f"cannot run here: {self.why}"
        return {
            "yes": self.why if self.running else f"on this machine, not running ({self.why})",
            "no": "not on this machine",
            "unknown": f"presence unknown ({self.why})",
        }[self.state]


def bus_problems(found: Iterable[Found]) -> dict[str, int]:
    """Each bus problem of a listing, with how many of its entries cannot run because of it."""
    counts: dict[str, int] = {}
    for item in found:
        if item.problem:
            counts[item.problem] = counts.get(item.problem, 0) + 1
    return counts


def matches(pattern: str, name: str) -> bool:
    """An exact bus name, or a prefix ending in `*` (`org.mpris.MediaPlayer2.*`)."""
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return name == pattern


def judge(presence: Presence | None, names: BusNames | str | None, which: Mapping[str, str | None]) -> Found:
    """The verdict for one entry from its bus's names (or why they are not known) and the commands found."""
    if presence is None:
        return Found("unknown", "the entry does not say how to find the app")
    if not isinstance(names, str | None):
        for pattern in presence.bus_names:
            running = sorted(n for n in names.running if matches(pattern, n))
            if running:
                return Found("yes", f"running on the {presence.bus} bus: {', '.join(running[:3])}", running=True)
        for pattern in presence.bus_names:
            startable = sorted(n for n in names.activatable if matches(pattern, n))
            if startable:
                return Found("yes", f"activatable on the {presence.bus} bus: {', '.join(startable[:3])}")
    if isinstance(names, str) and presence.bus_names:
        return Found("cannot", f"its {presence.bus} bus cannot be reached", problem=names)
    for command in presence.commands:
        path = which.get(command)
        if path:
            return Found("yes", f"command {command} ({path})")
    return Found("no", "no bus name or command of the entry was found")


async def check(entries: Iterable[Entry], settings: Settings, timeout: float = ASK_TIMEOUT) -> dict[str, Found]:
    """Each entry's presence, by app id; the buses are asked in parallel, each once."""
    listed = list(entries)
    buses = sorted({e.presence.bus for e in listed if e.presence and e.presence.bus_names})
    answers = await asyncio.gather(*(_names(bus, settings, timeout) for bus in buses))
    by_bus = dict(zip(buses, answers, strict=True))
    commands = {c for e in listed if e.presence for c in e.presence.commands}
    which = {c: shutil.which(c) for c in commands}
    return {e.app_id: judge(e.presence, by_bus.get(e.presence.bus) if e.presence else None, which) for e in listed}


async def _names(bus: str, settings: Settings, timeout: float) -> BusNames | str:
    if settings.platform != "linux":
        return f"DBus is asked on linux only (this platform is {settings.platform})"
    try:
        from aai_gateway.executors import dbus_names  # noqa: PLC0415 (dbus-fast: heavy, and Linux only)
    except ImportError as exc:
        return f"DBus cannot be asked here: {exc}"
    try:
        return await dbus_names.bus_names(bus, settings, timeout)
    except AaiError as exc:
        return f"the {bus} bus could not be asked: {exc.detail}"


def entries_for(names: Iterable[str], entries: Iterable[Entry], bus: str = "session") -> dict[str, list[Entry]]:
    """Bus name → the entries whose presence names it on `bus` (for pointing at them from `--discover`)."""
    listed = [e for e in entries if e.presence is not None and e.presence.bus == bus]
    found: dict[str, list[Entry]] = {}
    for name in names:
        hits = [e for e in listed if e.presence and any(matches(p, name) for p in e.presence.bus_names)]
        if hits:
            found[name] = hits
    return found


def pointers(found: Mapping[str, list[Entry]], installed: Iterable[str] = ()) -> list[str]:
    """Lines pointing from bus names to the library entries that drive them, leaving out installed ones."""
    done = set(installed)
    lines = []
    for name, hits in sorted(found.items()):
        for entry in hits:
            if entry.app_id not in done:
                lines.append(f"  {name}: {entry.name}, in the library: aai-gateway install {entry.app_id}")
    return ["", "In the library:", *lines] if lines else []

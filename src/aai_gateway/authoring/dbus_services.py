"""The named services of a DBus bus and the interfaces on their objects.

`list_services` asks the bus for its names (ListNames, ListActivatableNames), skipping unique names
(`:1.42`) and the bus itself, and introspects each running service recursively over its object
paths. `introspect_service` does the same for one service, starting it first when it is activatable
and stopping it again afterwards (SIGTERM to the process that took the name, only if that process
began after the request to start it; otherwise it is left running and the caller is told). Every
walk is bounded (depth, number of objects, a timeout per call), and listing never starts a service:
its messages carry NO_AUTOSTART.

This module needs dbus-fast (Linux); it is imported only where DBus is used, never by the package.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dbus_fast import Message, MessageFlag, MessageType
from dbus_fast.aio import MessageBus
from dbus_fast.errors import DBusFastError
from dbus_fast.introspection import Node
from dbus_fast.validators import is_bus_name_valid, is_object_path_valid

from aai_gateway.authoring.generate import is_standard
from aai_gateway.config import Settings
from aai_gateway.descriptor import Descriptor, instances
from aai_gateway.errors import AppNotRunning, AutomationFailed, InvalidParams, Timeout
from aai_gateway.executors.dbus_names import ask_bus, connect

BUS_DAEMON = "org.freedesktop.DBus"
BUS_PATH = "/org/freedesktop/DBus"
INTROSPECTABLE = "org.freedesktop.DBus.Introspectable"
NOT_RUNNING = {"org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"}
MAX_DEPTH = 6
MAX_NODES = 200
CALL_TIMEOUT = 2.0
START_TIMEOUT = 30.0
STOP_WAIT = 5.0
PARALLEL = 8
PROC = Path("/proc")
START_REPLY_SUCCESS = 1
"""StartServiceByName's answer when the bus itself started the service (2: it was running already)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Started:
    """A service that reading its interface started by DBus activation, and whether it was stopped again."""

    name: str
    pid: int | None
    stopped: bool
    why: str = ""
    """Why it was left running, when it was."""

    def note(self) -> str:
        pid = f" (pid {self.pid})" if self.pid else ""
        if self.stopped:
            return f"{self.name} was started to read its interface and has been stopped again{pid}"
        why = f": {self.why}" if self.why else ""
        return f"{self.name} was started to read its interface and is still running{pid}{why}"


@dataclass(frozen=True, slots=True)
class Tree:
    """A service's objects as introspected: object path → node, shallowest first."""

    service: str
    objects: Mapping[str, Node]
    truncated: bool = False
    """The walk stopped at a bound (depth or number of objects) with objects left unvisited."""
    error: str | None = None
    """Why the walk stopped early or found nothing, if it did."""
    started: Started | None = None
    """The service was not running and was started to be read (by `introspect_service`)."""

    def interfaces(self) -> dict[str, list[str]]:
        """The service's own interfaces (no org.freedesktop.DBus.*), each with the objects that have it."""
        found: dict[str, list[str]] = {}
        for path, node in self.objects.items():
            for interface in node.interfaces:
                if not is_standard(interface.name):
                    found.setdefault(interface.name, []).append(path)
        return dict(sorted(found.items()))


@dataclass(frozen=True, slots=True)
class Service:
    name: str
    running: bool
    activatable: bool
    tree: Tree | None = None
    described_by: tuple[str, ...] = field(default_factory=tuple)
    """App ids of the scanned descriptors that drive this service."""

    def to_json(self) -> dict[str, Any]:
        tree = self.tree
        return {
            "name": self.name,
            "running": self.running,
            "activatable": self.activatable,
            "describedBy": list(self.described_by),
            "interfaces": [{"name": n, "objects": p} for n, p in (tree.interfaces() if tree else {}).items()],
            "truncated": bool(tree and tree.truncated),
            "error": tree.error if tree else None,
        }


def report(services: list[Service], bus_type: str = "session") -> list[str]:
    """The services as readable lines: name, state and descriptors, then each interface and its objects."""
    running = sum(1 for s in services if s.running)
    lines = [
        f"DBus {bus_type} bus: {len(services)} services ({running} running, {len(services) - running} activatable)"
    ]
    for service in services:
        state = "running" if service.running else "activatable, not running"
        if service.running and service.activatable:
            state += ", activatable"
        described = f"  [described by {', '.join(service.described_by)}]" if service.described_by else ""
        lines.extend(("", f"{service.name}  {state}{described}"))
        tree = service.tree
        interfaces = tree.interfaces() if tree else {}
        for interface, objects in interfaces.items():
            more = f" (+{len(objects) - 3} more)" if len(objects) > 3 else ""
            lines.append(f"  {interface}  {', '.join(objects[:3])}{more}")
        if service.running and not interfaces:
            lines.append("  no interfaces of its own")
        if tree and (tree.error or tree.truncated):
            lines.append(f"  ({tree.error or 'introspection stopped at its bound'})")
    lines.extend(("", "Write a descriptor with: aai-gateway --generate NAME --out ~/.aai/<appId>/aai.json"))
    return lines


def described_by(apps: Iterable[Descriptor]) -> dict[str, tuple[str, ...]]:
    """Bus name → ids of the apps whose linux binding (or one of its tools) calls that service."""
    found: dict[str, list[str]] = {}
    for app in apps:
        binding = app.bindings.get("linux")
        if binding is None or binding.automation not in ("dbus", "ipc"):
            continue
        services = {str(binding.options.get("service") or app.app_id)}
        services.update(str(t.options["service"]) for t in binding.tools if t.options.get("service"))
        for service in services:
            found.setdefault(service, []).append(app.app_id)
    return {name: tuple(ids) for name, ids in found.items()}


def describing(owners: Mapping[str, tuple[str, ...]], name: str) -> tuple[str, ...]:
    """The apps `described_by` found for bus name `name`: by that name, or by a service pattern matching it."""
    found = list(owners.get(name, ()))
    for service, ids in owners.items():
        if instances.is_pattern(service) and name.startswith(service[:-1]) and len(name) > len(service) - 1:
            found.extend(ids)
    return tuple(dict.fromkeys(found))


async def _call_bus(bus: MessageBus, member: str, signature: str = "", body: Iterable[Any] = ()) -> list[Any]:
    async with asyncio.timeout(CALL_TIMEOUT):
        return await ask_bus(bus, member, signature, body)


def _named(names: Iterable[str]) -> set[str]:
    return {n for n in names if not n.startswith(":") and n != BUS_DAEMON}


async def _introspect(bus: MessageBus, service: str, path: str) -> Node | str:
    """The node at `path`, or why there is none; raises TimeoutError, AppNotRunning."""
    message = Message(
        destination=service,
        path=path,
        interface=INTROSPECTABLE,
        member="Introspect",
        flags=MessageFlag.NO_AUTOSTART,
    )
    async with asyncio.timeout(CALL_TIMEOUT):
        reply = await bus.call(message)
    if reply.message_type == MessageType.ERROR:
        if reply.error_name in NOT_RUNNING:
            raise AppNotRunning(f"{service} is not on the bus")
        return f"{path}: {reply.error_name}: {reply.body[0] if reply.body else ''}".rstrip(": ")
    try:
        return Node.parse(reply.body[0])
    except (DBusFastError, ValueError, SyntaxError, IndexError) as exc:
        return f"{path}: the introspection data is not valid: {exc}"


def _child_path(parent: str, name: str) -> str:
    if name.startswith("/"):
        return name
    return ("" if parent == "/" else parent) + "/" + name.strip("/")


async def walk(bus: MessageBus, service: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Tree:
    """Introspect `service` from `/` down, breadth first, at most `max_nodes` objects `max_depth` deep."""
    objects: dict[str, Node] = {}
    errors: list[str] = []
    queue: list[tuple[str, int]] = [("/", 0)]
    seen = {"/"}
    visited = 0
    cut = False
    while queue and visited < max_nodes:
        path, depth = queue.pop(0)
        visited += 1
        try:
            node = await _introspect(bus, service, path)
        except TimeoutError:
            errors.append(f"{path}: no answer to Introspect within {CALL_TIMEOUT:g} s")
            return Tree(service, objects, truncated=cut or bool(queue), error="; ".join(errors))
        if isinstance(node, str):
            errors.append(node)
            continue
        objects[path] = node
        if depth >= max_depth:
            cut = cut or bool(node.nodes)
            continue
        for child in node.nodes:
            child_path = _child_path(path, child.name or "")
            if child.name and child_path not in seen and is_object_path_valid(child_path):
                seen.add(child_path)
                queue.append((child_path, depth + 1))
    error = "; ".join(errors[:3]) + (f" (+{len(errors) - 3} more)" if len(errors) > 3 else "") if errors else None
    return Tree(service, objects, truncated=cut or bool(queue), error=error)


async def list_services(
    bus_type: str = "session", apps: Iterable[Descriptor] = (), settings: Settings | None = None
) -> list[Service]:
    """Every named service, running or activatable, with the interfaces of the running ones."""
    bus = await connect(bus_type, settings)
    try:
        try:
            [running] = await _call_bus(bus, "ListNames")
            [activatable] = await _call_bus(bus, "ListActivatableNames")
        except TimeoutError:
            raise Timeout(f"the DBus {bus_type} bus did not list its names within {CALL_TIMEOUT:g} s") from None
        names, startable = _named(running), _named(activatable)
        limit = asyncio.Semaphore(PARALLEL)

        async def tree(name: str) -> Tree | None:
            if name not in names:
                return None
            async with limit:
                try:
                    return await walk(bus, name)
                except AppNotRunning:
                    return Tree(name, {}, error="left the bus while being introspected")

        ordered = sorted(names | startable)
        trees = await asyncio.gather(*(tree(n) for n in ordered))
    finally:
        bus.disconnect()
    owners = described_by(apps)
    return [
        Service(name, name in names, name in startable, found, describing(owners, name))
        for name, found in zip(ordered, trees, strict=True)
    ]


async def introspect_service(name: str, bus_type: str = "session", settings: Settings | None = None) -> Tree:
    """One service's objects; an activatable service that is not running is started first, then stopped."""
    if not is_bus_name_valid(name) or name.startswith(":"):
        raise InvalidParams(f"'{name}' is not a well-known DBus bus name such as org.example.App")
    bus = await connect(bus_type, settings)
    started: Started | None = None
    try:
        try:
            [running] = await _call_bus(bus, "NameHasOwner", "s", [name])
            if not running:
                [activatable] = await _call_bus(bus, "ListActivatableNames")
                if name not in activatable:
                    raise AppNotRunning(
                        f"{name} is not on the DBus {bus_type} bus and no service file can start it; "
                        "start the app and try again (aai-gateway --discover lists the names)"
                    )
                asked = _boot_ticks()
                if await _start(bus, name):
                    started = await _owner_started(bus, name, asked)
        except TimeoutError:
            raise Timeout(f"the DBus {bus_type} bus did not answer within {CALL_TIMEOUT:g} s") from None
        try:
            tree = await walk(bus, name)
        finally:
            if started is not None:
                started = await _stop(bus, started)
    finally:
        bus.disconnect()
    if not tree.objects and tree.error:
        raise AutomationFailed(f"{name} could not be introspected: {tree.error}")
    return replace(tree, started=started)


async def _start(bus: MessageBus, name: str) -> bool:
    """Start `name` by DBus activation; True when the bus started it, False when it was running already."""
    message = Message(
        destination=BUS_DAEMON,
        path=BUS_PATH,
        interface=BUS_DAEMON,
        member="StartServiceByName",
        signature="su",
        body=[name, 0],
    )
    try:
        async with asyncio.timeout(START_TIMEOUT):
            reply = await bus.call(message)
    except TimeoutError:
        raise Timeout(f"{name} did not start within {START_TIMEOUT:g} s") from None
    if reply.message_type == MessageType.ERROR:
        detail = reply.body[0] if reply.body else reply.error_name
        raise AppNotRunning(f"{name} could not be started by DBus activation: {detail}")
    return bool(reply.body and reply.body[0] == START_REPLY_SUCCESS)


async def _owner_started(bus: MessageBus, name: str, asked: int | None) -> Started:
    """Who took `name` after activation, and whether it is safe to stop: a process begun since `asked`."""
    try:
        [pid] = await _call_bus(bus, "GetConnectionUnixProcessID", "s", [name])
    except AutomationFailed as exc:
        return Started(name, None, stopped=False, why=f"its process is unknown ({exc.detail})")
    began = _process_start_ticks(pid)
    if pid == os.getpid() or asked is None or began is None or began + 1 < asked:
        return Started(name, pid, stopped=False, why="that process was not started for this, so it is left alone")
    return Started(name, pid, stopped=False)


async def _stop(bus: MessageBus, started: Started) -> Started:
    """SIGTERM the process activation started, and wait for it to leave the bus."""
    if started.pid is None or started.why:
        return started
    try:
        os.kill(started.pid, signal.SIGTERM)
    except ProcessLookupError:
        return replace(started, stopped=True)
    except PermissionError:
        return replace(started, why="it belongs to another user")
    deadline = time.monotonic() + STOP_WAIT
    delay = 0.01
    while time.monotonic() < deadline:
        try:
            [owned] = await _call_bus(bus, "NameHasOwner", "s", [started.name])
        except (AutomationFailed, TimeoutError):
            break
        if not owned:
            return replace(started, stopped=True)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)
    return replace(started, why=f"it did not leave the bus within {STOP_WAIT:g} s of SIGTERM")


def _clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK")


def _boot_ticks() -> int | None:
    """Now, in the clock ticks since boot that /proc/<pid>/stat gives a process's start in; None off Linux."""
    if not hasattr(time, "CLOCK_BOOTTIME"):
        return None
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _clock_ticks())


def _process_start_ticks(pid: int) -> int | None:
    """When process `pid` began, in clock ticks since boot (field 22 of /proc/<pid>/stat); None if unknown."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        return int(fields[19])  # fields after "pid (comm)" start at field 3, state
    except (IndexError, ValueError):
        return None

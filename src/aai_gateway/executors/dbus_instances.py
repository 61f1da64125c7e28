"""Which running service a call of a binding with a service pattern (`org.mpris.MediaPlayer2.*`) goes to.

The bus names are listed on every call (ListNames, then GetConnectionUnixProcessID for the few that
match, at once): on a desktop bus with a hundred names that is two round trips of well under a
millisecond each, cheaper than keeping a cache right through NameOwnerChanged. One program owning
several matching names, even through two connections (VLC owns `org.mpris.MediaPlayer2.vlc` and
`org.mpris.MediaPlayer2.vlc.instance<pid>`), is one instance.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dbus_fast import Message, MessageType
from dbus_fast.aio import MessageBus

from aai_gateway.descriptor.instances import Instances, Member
from aai_gateway.errors import AppNotRunning, InvalidParams
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.dbus_types import from_dbus

BUS = "org.freedesktop.DBus"
BUS_PATH = "/org/freedesktop/DBus"
PROPERTIES = "org.freedesktop.DBus.Properties"


@dataclass(frozen=True, slots=True)
class Instance:
    names: tuple[str, ...]
    """The matching bus names one connection owns, the shortest first."""
    label: Any = None
    preferred: Any = None

    @property
    def name(self) -> str:
        return self.names[0]


async def running(bus: MessageBus, picking: Instances, path: str, *, details: bool = False) -> list[Instance]:
    """The instances on the bus, by their shortest name; `details` also reads their label and prefer properties
    (at object `path`)."""
    listed = await _ask(bus, BUS, BUS_PATH, "ListNames")
    names: list[str] = listed[0] if listed else []
    matching = sorted((n for n in names if picking.matches(n)), key=lambda n: (len(n), n))
    owners = await asyncio.gather(*(_process(bus, n) for n in matching))
    grouped: dict[str, list[str]] = {}
    for name, owner in zip(matching, owners, strict=True):
        if owner is not None:
            grouped.setdefault(owner, []).append(name)
    found = [Instance(tuple(group)) for group in grouped.values()]
    found.sort(key=lambda i: i.name)
    if details:
        found = list(await asyncio.gather(*(_detailed(bus, picking, path, i) for i in found)))
    return found


async def pick(bus: MessageBus, picking: Instances, path: str, args: Mapping[str, Any], kind: str) -> str:
    """The bus name the call goes to: the one the argument names, else the preferred one, else the only one."""
    found = await running(bus, picking, path)
    pattern = picking.prefix + "*"
    if not found:
        raise AppNotRunning(f"no {pattern} service is running on the {kind} bus; start one (such as a media player)")
    wanted = args.get(picking.argument)
    if isinstance(wanted, str) and wanted:
        return (await _named(bus, picking, path, found, wanted)).name
    if len(found) == 1:
        return found[0].name
    found = list(await asyncio.gather(*(_detailed(bus, picking, path, i) for i in found)))
    if picking.prefer is not None:
        preferred = [i for i in found if i.preferred == picking.prefer.value]
        if len(preferred) == 1:
            return preferred[0].name
    raise InvalidParams(
        f"{len(found)} {pattern} services are running: {_listed(picking, found)}; "
        f"say which one with the '{picking.argument}' argument"
    )


def listing(picking: Instances, found: list[Instance]) -> list[dict[str, Any]]:
    """What a tool with `"instances": true` returns: one object per instance."""
    rows = []
    for instance in found:
        row: dict[str, Any] = {picking.argument: picking.short(instance.name), "service": instance.name}
        if picking.label:
            row[_key(picking.label)] = instance.label
        if picking.prefer:
            row[_key(picking.prefer)] = instance.preferred
        rows.append(row)
    return rows


def without_argument(call: ToolCall, picking: Instances) -> ToolCall:
    """The call as the DBus method sees it: the instance argument was for the gateway only."""
    params = dict(call.tool.parameters)
    params["properties"] = {k: v for k, v in (params.get("properties") or {}).items() if k != picking.argument}
    args = {k: v for k, v in call.args.items() if k != picking.argument}
    return replace(call, tool=replace(call.tool, parameters=params), args=args)


async def _named(bus: MessageBus, picking: Instances, path: str, found: list[Instance], wanted: str) -> Instance:
    want = wanted.casefold()
    shorts = [[picking.short(n).casefold() for n in i.names] for i in found]
    hits = [i for i, names in zip(found, shorts, strict=True) if want in names]
    if not hits:
        hits = [i for i, names in zip(found, shorts, strict=True) if any(n.split(".")[0] == want for n in names)]
    if not hits or picking.label is not None:
        found = list(await asyncio.gather(*(_detailed(bus, picking, path, i) for i in found)))
    if not hits and picking.label is not None:
        hits = [i for i in found if isinstance(i.label, str) and i.label.casefold() == want]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise AppNotRunning(
            f"no running {picking.prefix}* service matches {picking.argument} '{wanted}'; "
            f"running: {_listed(picking, found)}"
        )
    hits = [i for i in found if i.name in {h.name for h in hits}]
    raise InvalidParams(
        f"{picking.argument} '{wanted}' matches {len(hits)} running services: {_listed(picking, hits)}; "
        "give the whole end of the bus name"
    )


def _listed(picking: Instances, found: list[Instance]) -> str:
    parts = []
    for instance in found:
        about = [str(v) for v in (instance.label, instance.preferred) if v is not None]
        short = picking.short(instance.name)
        parts.append(f"{short} ({', '.join(about)})" if about else short)
    return ", ".join(parts)


def _key(member: Member) -> str:
    return member.property[:1].lower() + member.property[1:]


async def _detailed(bus: MessageBus, picking: Instances, path: str, instance: Instance) -> Instance:
    label, preferred = await asyncio.gather(
        _read(bus, instance.name, path, picking.label), _read(bus, instance.name, path, picking.prefer)
    )
    return replace(instance, label=label, preferred=preferred)


async def _read(bus: MessageBus, name: str, path: str, member: Member | None) -> Any:
    """A property of one instance; None when it has none or left the bus meanwhile."""
    if member is None:
        return None
    body = await _ask(bus, name, path, "Get", member.interface, member.property)
    return from_dbus(body[0]) if body else None


async def _process(bus: MessageBus, name: str) -> str | None:
    """Which program owns `name`: its process id, else its connection; None once it left the bus."""
    body = await _ask(bus, BUS, BUS_PATH, "GetConnectionUnixProcessID", name)
    if body:
        return f"pid {body[0]}"
    body = await _ask(bus, BUS, BUS_PATH, "GetNameOwner", name)
    return str(body[0]) if body else None


async def _ask(bus: MessageBus, destination: str, path: str, member: str, *args: Any) -> list[Any]:
    """A method of the bus itself, or Properties.Get of an instance: the reply's body, [] for an error reply."""
    interface = PROPERTIES if destination != BUS else BUS
    signature = "ss" if interface == PROPERTIES else ("s" if args else "")
    reply = await bus.call(
        Message(
            destination=destination, path=path, interface=interface, member=member, signature=signature, body=list(args)
        )
    )
    if reply is None or reply.message_type == MessageType.ERROR:
        return []
    return list(reply.body)

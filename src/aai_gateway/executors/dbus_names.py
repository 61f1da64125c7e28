"""The names a DBus bus knows: connected now (ListNames) and startable on demand (ListActivatableNames).

Asking the bus daemon for its names never starts a service. Linux only; imported where a bus is asked,
never by the package.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dbus_fast import BusType, Message, MessageType
from dbus_fast.aio import MessageBus

from aai_gateway import paths, session_bus
from aai_gateway.config import Settings
from aai_gateway.errors import AutomationFailed, Timeout

BUS_DAEMON = "org.freedesktop.DBus"
BUS_PATH = "/org/freedesktop/DBus"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BusNames:
    running: frozenset[str]
    activatable: frozenset[str]


async def connect(bus_type: str = "session", settings: Settings | None = None) -> MessageBus:
    """The `bus_type` bus; with no DBUS_SESSION_BUS_ADDRESS, the session bus the quick start recorded."""
    recorded = settings.session_bus if settings is not None and bus_type == "session" else None
    address = recorded.address if recorded is not None and recorded.usable else None
    try:
        bus = await MessageBus(
            bus_address=address, bus_type=BusType.SYSTEM if bus_type == "system" else BusType.SESSION
        ).connect()
    except Exception as exc:
        home = settings.aai_home if settings is not None else paths.aai_home(paths.environ())
        problem = session_bus.connect_problem(bus_type, exc, paths.environ(), recorded, home / paths.SESSION_BUS_FILE)
        raise AutomationFailed(problem) from exc
    if address is not None and recorded is not None:
        log.info("DBUS_SESSION_BUS_ADDRESS is not set: using %s", recorded.describe())
    return bus


async def ask_bus(bus: MessageBus, member: str, signature: str = "", body: Iterable[Any] = ()) -> list[Any]:
    """Call a method of the bus itself; raises AutomationFailed when the bus refuses."""
    message = Message(
        destination=BUS_DAEMON,
        path=BUS_PATH,
        interface=BUS_DAEMON,
        member=member,
        signature=signature,
        body=list(body),
    )
    reply = await bus.call(message)
    if reply.message_type == MessageType.ERROR:
        raise AutomationFailed(f"the bus refused {member}: {reply.error_name} {reply.body[0] if reply.body else ''}")
    return list(reply.body)


async def bus_names(bus_type: str, settings: Settings | None = None, timeout: float = 2.0) -> BusNames:
    """The well-known names on the bus, running and activatable; AutomationFailed or Timeout when it cannot say."""
    try:
        async with asyncio.timeout(timeout):
            bus = await connect(bus_type, settings)
            try:
                [running] = await ask_bus(bus, "ListNames")
                [activatable] = await ask_bus(bus, "ListActivatableNames")
            finally:
                bus.disconnect()
    except TimeoutError:
        raise Timeout(f"the DBus {bus_type} bus did not list its names within {timeout:g} s") from None
    return BusNames(_named(running), _named(activatable))


def _named(names: Iterable[str]) -> frozenset[str]:
    return frozenset(n for n in names if not n.startswith(":"))

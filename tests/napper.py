"""A DBus test app whose one operation takes a while, served from the test's own event loop.

It counts its naps in flight and the most ever in flight at once, so a test proves overlap or limits
by what the app saw, never by how long a call took.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from dbus_fast import BusType
from dbus_fast.aio import MessageBus
from dbus_fast.annotations import DBusDouble, DBusStr
from dbus_fast.service import ServiceInterface, dbus_method

from tests.support import Bus


class Napper(ServiceInterface):
    """`Nap(d seconds) -> s`, counting the naps in flight and the most ever in flight at once."""

    def __init__(self, interface: str) -> None:
        super().__init__(interface)
        self.in_flight = 0
        self.peak = 0
        self.naps = 0

    @dbus_method()
    async def Nap(self, seconds: DBusDouble) -> DBusStr:  # noqa: N802  # DBus member names are CamelCase
        self.in_flight += 1
        self.naps += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(seconds)
        finally:
            self.in_flight -= 1
        return "rested"


def descriptor(app_id: str, service: str, interface: str, path: str, name: str = "Napper") -> dict[str, Any]:
    """A multi-platform descriptor whose one tool, `nap`, calls Nap of `service`."""
    tool = {
        "name": "nap",
        "description": "Answer after some seconds",
        "parameters": {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
        "method": "Nap",
        "output_parser": "string",
    }
    linux = {"automation": "dbus", "service": service, "object": path, "interface": interface, "tools": [tool]}
    return {
        "schema_version": "1.0",
        "appId": app_id,
        "name": name,
        "description": "A test app whose one operation takes a while",
        "version": "1.0.0",
        "platforms": {"linux": linux},
    }


@asynccontextmanager
async def serving(bus: Bus, interface: str, path: str, names: Iterable[str]) -> AsyncIterator[Napper]:
    """One Napper at `path`, owning every bus name in `names`, until the block ends."""
    connection = await MessageBus(bus_address=bus.address, bus_type=BusType.SESSION).connect()
    service = Napper(interface)
    connection.export(path, service)
    for name in names:
        await connection.request_name(name)
    try:
        yield service
    finally:
        connection.disconnect()

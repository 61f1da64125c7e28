"""A small DBus test service used by the gateway's DBus tests.

It owns ``dev.aai.Echo`` (or ``--name``) on the session bus named by
``DBUS_SESSION_BUS_ADDRESS`` and exports ``/dev/aai/Echo`` with interface
``dev.aai.Echo``. Once the name is owned it prints ``ready`` on stdout, so a
test can wait for that line instead of sleeping. SIGTERM or SIGINT stops it
with exit status 0 (a pending Sleep then fails with
``dev.aai.Echo.Error.Stopping``); if the name is taken it exits with 1.

    Echo(s) -> s                 its argument, unchanged
    Add(i, i) -> i               sum (an int32 overflow fails the call)
    Scale(d, d) -> d             product
    Negate(b) -> b               logical not
    Join(as parts, s sep) -> s   sep.join(parts)
    Describe(s, i, d, b, as) -> s  the arguments as a JSON object
    Sleep(d seconds) -> s        "slept" after that many seconds, without blocking
    Fail(s message) -> s         always fails with dev.aai.Echo.Error.Failed
    Exit() -> s                  replies "bye", then the process dies (status 3)
    Calls() -> u                 calls served so far, not counting Calls
    Volume (property d, read-write), Label (property s, read-only)

On the same object, interface ``com.aai.Executor`` takes the gateway's JSON envelope:
``Execute(s) -> s`` with ``{version, tool, params, request_id}`` in and ``{status, result | error}``
out; tools ``echo`` (params.text) and ``deny`` (an error of type PERMISSION_DENIED).

Run it as ``python tests/apps/echo_service.py [--name BUS_NAME]``.
"""

# DBus member names are CamelCase by convention.
# ruff: noqa: N802

import argparse
import asyncio
import json
import os
import signal
import sys
from typing import Annotated, Any

from dbus_fast import BusType, DBusError, NameFlag, RequestNameReply
from dbus_fast.aio import MessageBus
from dbus_fast.annotations import (
    DBusBool,
    DBusDouble,
    DBusInt32,
    DBusSignature,
    DBusStr,
    DBusUInt32,
)
from dbus_fast.constants import PropertyAccess
from dbus_fast.service import ServiceInterface, dbus_method, dbus_property

from aai_gateway.executors.dbus import patient

DEFAULT_NAME = "dev.aai.Echo"
OBJECT_PATH = "/dev/aai/Echo"
INTERFACE = "dev.aai.Echo"
FAILED = "dev.aai.Echo.Error.Failed"
STOPPING = "dev.aai.Echo.Error.Stopping"
EXIT_STATUS_ON_EXIT = 3

DBusStrArray = Annotated[list[str], DBusSignature("as")]


class EchoInterface(ServiceInterface):
    """Methods that exercise every argument type the gateway maps."""

    def __init__(self) -> None:
        super().__init__(INTERFACE)
        self._calls = 0
        self._volume = 0.5
        self._stopping = asyncio.Event()
        self._sleepers: set[asyncio.Task[Any]] = set()

    async def stop(self) -> None:
        """End every pending Sleep with an error reply, so no call is left hanging at exit."""
        self._stopping.set()
        await asyncio.gather(*self._sleepers, return_exceptions=True)

    def _count(self) -> None:
        self._calls += 1

    @dbus_property()
    def Volume(self) -> DBusDouble:
        return self._volume

    @Volume.setter  # type: ignore[no-redef]  # dbus-fast's property setter idiom
    def Volume(self, value: DBusDouble) -> None:
        if not 0.0 <= value <= 1.0:
            raise DBusError(FAILED, f"volume {value} is outside 0..1")
        self._volume = value

    @dbus_property(access=PropertyAccess.READ)
    def Label(self) -> DBusStr:
        return "echo"

    @dbus_method()
    def Echo(self, text: DBusStr) -> DBusStr:
        self._count()
        return text

    @dbus_method()
    def Add(self, a: DBusInt32, b: DBusInt32) -> DBusInt32:
        self._count()
        return a + b

    @dbus_method()
    def Scale(self, value: DBusDouble, factor: DBusDouble) -> DBusDouble:
        self._count()
        return value * factor

    @dbus_method()
    def Negate(self, flag: DBusBool) -> DBusBool:
        self._count()
        return not flag

    @dbus_method()
    def Join(self, parts: DBusStrArray, sep: DBusStr) -> DBusStr:
        self._count()
        return sep.join(parts)

    @dbus_method()
    def Describe(
        self,
        name: DBusStr,
        count: DBusInt32,
        ratio: DBusDouble,
        flag: DBusBool,
        tags: DBusStrArray,
    ) -> DBusStr:
        self._count()
        return json.dumps({"name": name, "count": count, "ratio": ratio, "flag": flag, "tags": tags})

    @dbus_method()
    async def Sleep(self, seconds: DBusDouble) -> DBusStr:
        self._count()
        # Sleeps without blocking the loop, cut short when the service stops.
        sleeper = asyncio.ensure_future(asyncio.wait_for(self._stopping.wait(), seconds))
        self._sleepers.add(sleeper)
        try:
            await sleeper
        except TimeoutError:
            return "slept"
        finally:
            self._sleepers.discard(sleeper)
        raise DBusError(STOPPING, "the echo service is stopping")

    @dbus_method()
    def Fail(self, message: DBusStr) -> DBusStr:
        self._count()
        raise DBusError(FAILED, message)

    @dbus_method()
    def Exit(self) -> DBusStr:
        self._count()
        # Reply first, then vanish without any cleanup, like a crashing app.
        asyncio.get_running_loop().call_later(0.05, os._exit, EXIT_STATUS_ON_EXIT)
        return "bye"

    @dbus_method()
    def Calls(self) -> DBusUInt32:
        return self._calls


class EnvelopeInterface(ServiceInterface):
    """The `ipc` binding: one method taking and returning a JSON envelope."""

    def __init__(self) -> None:
        super().__init__("com.aai.Executor")

    @dbus_method()
    def Execute(self, request: DBusStr) -> DBusStr:
        envelope = json.loads(request)
        params = envelope.get("params", {})
        if envelope.get("tool") == "echo":
            reply: dict[str, Any] = {
                "status": "success",
                "result": {"text": params.get("text"), "id": envelope["request_id"]},
            }
        elif envelope.get("tool") == "deny":
            reply = {"status": "error", "error": {"type": "PERMISSION_DENIED", "message": "the user said no"}}
        else:
            reply = {"status": "error", "error": {"code": -32003, "message": f"no tool {envelope.get('tool')}"}}
        return json.dumps(reply)


async def serve(bus_name: str) -> int:
    """Own ``bus_name``, announce readiness, and serve until SIGTERM or SIGINT."""
    bus = await MessageBus(bus_type=BusType.SESSION).connect()
    patient(bus)  # answers of megabytes, several at once, must not drop the connection (as a GLib app's would not)
    echo = EchoInterface()
    bus.export(OBJECT_PATH, echo)
    bus.export(OBJECT_PATH, EnvelopeInterface())
    reply = await bus.request_name(bus_name, NameFlag.DO_NOT_QUEUE)
    if reply is not RequestNameReply.PRIMARY_OWNER:
        print(f"could not own {bus_name}: {reply.name}", file=sys.stderr)
        bus.disconnect()
        return 1

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    print("ready", flush=True)
    await stop.wait()
    await echo.stop()
    bus.disconnect()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="DBus echo service for tests.")
    parser.add_argument("--name", default=DEFAULT_NAME, help=f"bus name to own (default: {DEFAULT_NAME})")
    args = parser.parse_args(argv)
    return asyncio.run(serve(args.name))


if __name__ == "__main__":
    sys.exit(main())

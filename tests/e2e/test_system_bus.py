"""The system bus, for real: the bus daemon's own interface on a private bus of the system type."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session, text_of
from tests.support import TEST_APPS, Bus, install_descriptor, running, start_app

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture
def system_bus(tmp_path: Path) -> Iterator[Bus]:
    bus = Bus(tmp_path / "system-bus", kind="system")
    try:
        yield bus
    finally:
        bus.stop()


async def test_bus_daemon_methods_and_properties_over_the_system_bus(bus: Bus, system_bus: Bus, tmp_path: Path) -> None:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "org.freedesktop.dbus" / "aai.json")
    # The gateway's session bus is another private bus: only the system bus holds the echo app.
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "DBUS_SESSION_BUS_ADDRESS": bus.address,
           "DBUS_SYSTEM_BUS_ADDRESS": system_bus.address}  # fmt: skip
    echo = start_app([sys.executable, str(TEST_APPS / "echo_service.py")], system_bus.env())
    with running(echo):
        async with stdio_session(env, tmp_path / "stderr.log") as session:

            async def text(tool: str, **args: str) -> str:
                arguments = {"app": "org.freedesktop.dbus", "tool": tool, "args": args}
                return text_of(await session.call_tool("aai_exec", arguments))

            async def run(tool: str, **args: str) -> object:
                return json.loads(await text(tool, **args))

            names = await run("list_names")
            assert isinstance(names, list)
            assert {"org.freedesktop.DBus", "dev.aai.Echo"} <= set(names)
            assert await run("name_has_owner", name="dev.aai.Echo") is True
            assert await run("name_has_owner", name="dev.aai.Nobody") is False
            assert await run("get_connection_pid", name="dev.aai.Echo") == echo.pid
            assert (await text("get_name_owner", name="dev.aai.Echo")).startswith(":1.")
            expected_id = subprocess.run(
                ["dbus-send", f"--bus={system_bus.address}", "--print-reply=literal", "--dest=org.freedesktop.DBus",
                 "/org/freedesktop/DBus", "org.freedesktop.DBus.GetId"],
                capture_output=True, text=True, check=True,
            ).stdout.strip()  # fmt: skip
            assert await text("bus_id") == expected_id
            assert isinstance(await run("features"), list)
            assert "org.freedesktop.DBus.Monitoring" in list(await run("interfaces"))  # type: ignore[call-overload]
        assert not bus.has_owner("dev.aai.Echo")

"""The org.freedesktop.dbus entry, run for real: installed with the command, served to the SDK client.

A private session bus with the echo app activatable on it; `aai-gateway install` writes the entry into a
temporary AAI home, the gateway lists it, and every read-only tool plus start_service runs through
aai_exec. The effects are checked on the bus itself (dbus-send), not through the gateway.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import stdio_session, text_of
from tests.support import TEST_APPS, Bus, gateway_command

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "org.freedesktop.dbus"
ECHO = "dev.aai.Echo"


@pytest.fixture
def activating_bus(tmp_path: Path) -> Iterator[Bus]:
    services = tmp_path / "services"
    services.mkdir()
    (services / f"{ECHO}.service").write_text(
        f"[D-BUS Service]\nName={ECHO}\nExec={sys.executable} {TEST_APPS / 'echo_service.py'}\n"
    )
    bus = Bus(tmp_path / "bus", service_dirs=[services])
    try:
        yield bus
    finally:
        pid = bus.owner_pid(ECHO)
        if pid:
            os.kill(pid, signal.SIGTERM)
        bus.stop()


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


async def test_installed_entry_is_listed_and_every_tool_acts_on_the_bus(activating_bus: Bus, tmp_path: Path) -> None:
    bus = activating_bus
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True)
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"readOnly": "allow"}}))
    env = bus.env(HOME=str(home), AAI_PLATFORM="linux")

    listed = cli(env, "library", "--json")
    assert listed.returncode == 0, listed.stderr
    [entry] = [e for e in json.loads(listed.stdout) if e["id"] == APP]
    assert (entry["present"], entry["installed"], entry["source"]) == ("yes", False, "bundled")
    assert entry["presentWhy"] == "running on the session bus: org.freedesktop.DBus"
    assert entry["running"] is True

    installed = cli(env, "install", APP)
    assert installed.returncode == 0, installed.stderr
    assert f"Installed Session message bus ({APP} 1.0.0) from the library" in installed.stdout
    assert "  start_service: Start the app or service" in installed.stdout
    assert "  list_names [read-only]: Every name connected" in installed.stdout
    assert '7 run without asking (consent.readOnly "allow" of the config (the tool is marked read-only))' in (
        installed.stdout
    )
    assert '1 ask the user first (consent.default "ask" of the config): start_service' in installed.stdout
    assert (home / ".aai" / APP / "aai.json").read_bytes() == (
        Path(__file__).parents[2] / "src/aai_gateway/library/apps" / APP / "aai.json"
    ).read_bytes()

    async with stdio_session(env, tmp_path / "stderr.log") as session:
        tools = {t.name for t in (await session.list_tools()).tools}
        assert "app_org_freedesktop_dbus" in tools

        async def text(tool: str, **args: Any) -> str:
            return text_of(await session.call_tool("aai_exec", {"app": APP, "tool": tool, "args": args}))

        async def run(tool: str, **args: Any) -> Any:
            return json.loads(await text(tool, **args))

        assert "org.freedesktop.DBus" in await run("list_names")
        assert ECHO in await run("list_activatable_names")
        assert await run("name_has_owner", name=ECHO) is False
        bus_id = subprocess.run(
            ["dbus-send", f"--bus={bus.address}", "--print-reply=literal", "--dest=org.freedesktop.DBus",
             "/org/freedesktop/DBus", "org.freedesktop.DBus.GetId"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        assert await text("bus_id") == bus_id
        assert isinstance(await run("features"), list)

        assert await run("start_service", name=ECHO) == 1  # the bus started it (2: it was running)
        assert bus.has_owner(ECHO)
        assert await run("name_has_owner", name=ECHO) is True
        assert await run("get_connection_pid", name=ECHO) == bus.owner_pid(ECHO)
        owner = bus.ask_bus("GetNameOwner", ECHO).split('"')[1]
        assert await text("get_name_owner", name=ECHO) == owner
        assert await run("start_service", name=ECHO) == 2

    again = cli(env, "library", "session", "bus")
    assert f"{APP}  Session message bus" in again.stdout
    assert "    installed; running on the session bus: org.freedesktop.DBus\n" in again.stdout
    assert "; source: bundled; version 1.0.0\n" in again.stdout

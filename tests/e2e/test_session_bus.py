"""Which bus the installed command uses, and what it says when there is none.

A new shell after `scripts/quickstart` has no DBUS_SESSION_BUS_ADDRESS: the command then uses the bus
the quick start recorded in `~/.aai/session-bus`, for CLI commands and `--mcp` alike. A bus that
cannot be reached, a system bus that is not running and a service that dies when the bus starts it
each come back as a detail saying what to do.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session, text_of
from tests.support import TEST_APPS, Bus, gateway_command, install_descriptor

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def new_shell(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a fresh login shell: no DBus addresses, no display."""
    return {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux", **extra}


def gateway(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def echo_home(home: Path) -> None:
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    rules = [{"app": "*", "decision": "allow"}]
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"rules": rules}, "errorStyle": "result"}))


def record(home: Path, address: str, pid: int) -> Path:
    """What scripts/quickstart writes for the bus it started (see test_quickstart for the script's own)."""
    file = home / ".aai" / "session-bus"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(f"export DBUS_SESSION_BUS_ADDRESS='{address}'\nDBUS_SESSION_BUS_PID={pid}\n")
    return file


async def test_a_new_shell_uses_the_recorded_bus_for_commands_and_mcp(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    home = tmp_path / "home"
    echo_home(home)
    file = record(home, bus.address, bus.proc.pid)
    env = new_shell(home)

    called = gateway(env, "call", "dev.aai.echo", "echo", '{"text": "found"}')
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == "found"

    listed = gateway(env, "--discover")
    assert listed.returncode == 0, listed.stderr
    assert "dev.aai.Echo  running  [described by dev.aai.echo]" in listed.stdout.splitlines()
    assert f"note: DBUS_SESSION_BUS_ADDRESS is not set: using the session bus recorded in {file}" in listed.stderr
    assert f"`. {file}` sets it in your shell" in listed.stderr

    async with stdio_session(env, tmp_path / "stderr.log") as session:
        args = {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "over mcp"}}
        assert text_of(await session.call_tool("aai_exec", args)) == "over mcp"
    logged = (home / ".aai" / "logs" / "gateway.log").read_text()
    assert f"DBUS_SESSION_BUS_ADDRESS is not set: using the session bus recorded in {file} ({bus.address}" in logged

    sourced = subprocess.run(
        ["bash", "-c", f'. "{file}" && echo "$DBUS_SESSION_BUS_ADDRESS"'],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert sourced.stdout.strip() == bus.address


def test_the_variable_wins_over_the_record(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    home = tmp_path / "home"
    echo_home(home)
    record(home, f"unix:path={tmp_path / 'elsewhere'}", 999_999_999)
    called = gateway(
        new_shell(home, DBUS_SESSION_BUS_ADDRESS=bus.address), "call", "dev.aai.echo", "echo", '{"text": "x"}'
    )
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == "x"


@pytest.fixture
def gone_bus(tmp_path: Path) -> tuple[str, int]:
    """The address and pid of a session bus that has been stopped."""
    stopped = Bus(tmp_path / "gone")
    stopped.stop()
    return stopped.address, stopped.proc.pid


def test_a_bus_that_is_gone_or_was_never_recorded_says_what_to_do(gone_bus: tuple[str, int], tmp_path: Path) -> None:
    home = tmp_path / "home"
    echo_home(home)
    nothing = gateway(new_shell(home), "call", "dev.aai.echo", "echo", '{"text": "x"}')
    assert nothing.returncode == 1
    assert "cannot connect to the DBus session bus: DBUS_SESSION_BUS_ADDRESS is not set" in nothing.stderr
    assert "`dbus-daemon --session --fork --print-address`" in nothing.stderr
    assert f"run scripts/quickstart, which starts one and records it in {home / '.aai' / 'session-bus'}" in (
        nothing.stderr
    )

    file = record(home, *gone_bus)
    for args in (("call", "dev.aai.echo", "echo", '{"text": "x"}'), ("--discover",)):
        stale = gateway(new_shell(home), *args)
        assert stale.returncode == 1
        assert f"the bus recorded in {file} is no longer running (its pid {gone_bus[1]} is gone)" in stale.stderr
        assert "run scripts/quickstart again to start one, or export DBUS_SESSION_BUS_ADDRESS" in stale.stderr


def test_a_system_bus_that_is_not_running_says_so(bus: Bus, tmp_path: Path) -> None:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "org.freedesktop.dbus" / "aai.json")
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}}))
    socket = tmp_path / "no-system-bus" / "system_bus_socket"
    env = new_shell(home, DBUS_SESSION_BUS_ADDRESS=bus.address, DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={socket}")
    called = gateway(env, "call", "org.freedesktop.dbus", "list_names")
    assert called.returncode == 1
    assert f"the DBus system bus: it is not running here (no {socket}); start it (`sudo service dbus start`" in (
        called.stderr
    )
    assert "or remove the descriptor of the app that uses it" in called.stderr


@pytest.fixture
def crashing_bus(tmp_path: Path) -> Iterator[Bus]:
    """A bus that can start dev.aai.Crash, whose program kills itself with SIGTRAP (signal 5) at once,
    as a notification server does when it finds no display."""
    services = tmp_path / "services"
    services.mkdir()
    (services / "dev.aai.Crash.service").write_text(
        "[D-BUS Service]\nName=dev.aai.Crash\nExec=/bin/sh -c 'kill -TRAP $$'\n"
    )
    crashing = Bus(tmp_path / "cbus", [services])
    try:
        yield crashing
    finally:
        crashing.stop()


def test_a_service_that_dies_when_started_says_what_to_do(crashing_bus: Bus, tmp_path: Path) -> None:
    home = tmp_path / "home"
    app = home / ".aai" / "dev.aai.crash" / "aai.json"
    app.parent.mkdir(parents=True)
    binding = {"automation": "dbus", "service": "dev.aai.Crash", "object": "/", "interface": "dev.aai.Crash"}
    tool = {"name": "ping", "description": "Ping", "parameters": {"type": "object", "properties": {}}}
    app.write_text(
        json.dumps(
            {
                "schema_version": "1.0",
                "appId": "dev.aai.crash",
                "name": "Crash",
                "description": "A service that dies when started",
                "platforms": {"linux": {**binding, "tools": [{**tool, "method": "Ping"}]}},
            }
        )
    )
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}}))
    called = gateway(new_shell(home, DBUS_SESSION_BUS_ADDRESS=crashing_bus.address), "call", "dev.aai.crash", "ping")
    assert called.returncode == 1
    assert (
        "dev.aai.Crash could not be started by DBus activation (Process dev.aai.Crash received signal 5): "
        "its program died at once. Run the Exec= line of its service file (the one with Name=dev.aai.Crash"
    ) in called.stderr
    assert "on a machine without one, start it yourself under Xvfb on this bus (`xvfb-run -a <program> &`)" in (
        called.stderr
    )
    assert "[-32009 APP_NOT_RUNNING]" in called.stderr

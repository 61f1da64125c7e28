"""The NetworkManager entry run for real: Debian's NetworkManager on a private system bus, in a network of its own.

The daemon runs in its own mount and network namespace (tests/system_bus.py): /etc and /var/lib are overlays,
/run a fresh tmpfs, and its network holds only a loopback and a veth pair made for the test, so this
machine's networking is never seen or touched. Its /sys is mounted read-only for that network, which tells
NetworkManager there is no udev to wait for (as in a container). What a changing tool did is read back
through a second channel: the addresses in the namespace (`ip`) and the state file NetworkManager writes.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session
from tests.library.interface_check import check_file, known_interfaces
from tests.library.library_gateway import LIBRARY, Exec, driving, library_home
from tests.library.waiting import waiting
from tests.support import Bus
from tests.system_bus import Isolated, SystemServices, system_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "org.freedesktop.networkmanager"
DAEMON = "/usr/sbin/NetworkManager"
BUS_NAME = "org.freedesktop.NetworkManager"
NM = "/org/freedesktop/NetworkManager"
CONNECTION = "aai-test"
ADDRESS = "10.77.0.1"
STATE_FILE = "/var/lib/NetworkManager/NetworkManager.state"
NAMESPACE = (
    "mount -t tmpfs none /run && mount -t sysfs -o ro sysfs /sys"
    " && mkdir -p /etc/NetworkManager/conf.d"
    " && printf '[main]\\nno-auto-default=*\\n' > /etc/NetworkManager/conf.d/aai-test.conf"
    " && ip link add aai0 type veth peer name aai1 && ip link set aai1 up"
    f" && exec {DAEMON} --no-daemon"
)


@dataclass
class Network:
    daemon: Isolated
    bus: Bus

    def nmcli(self, *args: str) -> str:
        done = subprocess.run(["nmcli", *args], env=system_env(self.bus), capture_output=True, text=True, check=True)
        return done.stdout.strip()

    def addresses(self, device: str) -> str:
        """`ip`'s view of `device` inside the daemon's network namespace."""
        inside = ["nsenter", f"--target={self.daemon.proc.pid}", "--net", "ip", "-4", "-o", "addr", "show", device]
        return subprocess.run(inside, capture_output=True, text=True, check=True).stdout

    def state_file(self) -> str:
        written = self.daemon.written(STATE_FILE)
        return written.read_text() if written.exists() else ""


@pytest.fixture(scope="module")
def network(system_bus: Bus, system_services: SystemServices) -> Network:
    """NetworkManager, once for the module, with a saved static connection for the veth aai0 (not connected)."""
    for command, package in ((DAEMON, "network-manager"), ("ip", "iproute2"), ("nsenter", "util-linux")):
        if shutil.which(command) is None:
            pytest.skip(f"{command} is not installed (Debian package {package})")
    daemon = system_services.ensure(BUS_NAME, ["sh", "-c", NAMESPACE], network=True)
    assert daemon is not None
    running = Network(daemon, system_bus)
    running.nmcli(
        "connection", "add", "type", "ethernet", "ifname", "aai0", "con-name", CONNECTION, "autoconnect", "no",
        "ipv4.method", "manual", "ipv4.addresses", f"{ADDRESS}/24", "ipv6.method", "disabled",
    )  # fmt: skip
    return running


def env(system_bus: Bus, home: Path) -> dict[str, str]:
    return system_env(system_bus, HOME=str(home), AAI_PLATFORM="linux")


async def saved(run: Exec) -> str:
    """The object path of the test's saved connection."""
    for path in await run("list_connections"):
        if (await run("connection_settings", connection=path))["connection"]["id"] == CONNECTION:
            return str(path)
    raise AssertionError(f"NetworkManager does not list the connection {CONNECTION}")


async def test_waits_for_the_network_state_to_change(system_bus: Bus, network: Network, tmp_path: Path) -> None:
    """aai_wait for state_changed, pending while the gateway connects the veth (NetworkManager goes to
    connected locally), disconnects it and switches networking off and on again."""
    home = library_home(tmp_path / "home", APP)
    async with stdio_session(env(system_bus, home), tmp_path / "stderr.log") as session:
        run = Exec(session, APP)
        connection = await saved(run)
        async with waiting(session, app=APP, event="state_changed", filter="state >= `50`", timeout=60) as up:
            active = await run("activate_connection", connection=connection)
        assert (await up.answer())["payload"]["state"] in {50, 60, 70}
        assert ADDRESS in network.addresses("aai0")

        async with waiting(session, app=APP, event="state_changed", filter="state == `20`", timeout=60) as down:
            await run("deactivate_connection", active_connection=active)
        assert (await down.answer())["payload"] == {"state": 20}

        async with waiting(session, app=APP, event="state_changed", filter="state == `10`", timeout=60) as asleep:
            await run("set_networking_enabled", enabled=False)
        assert (await asleep.answer())["payload"] == {"state": 10}
        async with waiting(session, app=APP, event="state_changed", timeout=60) as awake:
            await run("set_networking_enabled", enabled=True)
        assert (await awake.answer())["payload"] == {"state": 20}


async def test_reads_connects_and_switches_networking(system_bus: Bus, network: Network, tmp_path: Path) -> None:
    """Every read-only tool; connecting and disconnecting the veth (its address seen in the namespace), and
    switching networking and Wi-Fi off with the declared undos (NetworkManager's state file as the proof)."""
    async with driving(APP, tmp_path, lambda home: env(system_bus, home)) as run:
        state = await run("network_state")
        assert (state["State"], state["NetworkingEnabled"]) == (20, True)
        assert len(state["ActiveConnections"]) == 1  # the loopback's, which NetworkManager only watches
        assert await run("check_connectivity") in range(5)
        devices = {(await run("device_info", device=d))["Interface"]: d for d in await run("list_devices")}
        assert set(devices) == {"lo", "aai0", "aai1"}
        veth = await run("device_info", device=devices["aai0"])
        assert (veth["State"], veth["ActiveConnection"]) == (30, "/")  # disconnected
        connection = await saved(run)
        settings = await run("connection_settings", connection=connection)
        assert (settings["connection"]["interface-name"], settings["ipv4"]["method"]) == ("aai0", "manual")

        kind, detail = await run.error("wifi_networks", device=devices["aai0"])  # a veth is no Wi-Fi device
        assert kind == "AUTOMATION_FAILED"
        assert "Wireless" in detail
        kind, detail = await run.error("access_point_info", access_point=f"{NM}/AccessPoint/1")
        assert kind == "AUTOMATION_FAILED"
        assert "AccessPoint/1" in detail

        active = await run("activate_connection", connection=connection, device=devices["aai0"])
        assert active.startswith(f"{NM}/ActiveConnection/")
        assert active in (await run("network_state"))["ActiveConnections"]
        assert f"{ADDRESS}/24" in network.addresses("aai0")
        assert await run("deactivate_connection", active_connection=active) is None
        assert ADDRESS not in network.addresses("aai0")

        step = await run.step("set_networking_enabled", enabled=False)  # as a plan runs it, then undone
        assert step.before["NetworkingEnabled"] is True
        assert "NetworkingEnabled=false" in network.state_file()
        assert (await run("network_state"))["State"] == 10  # asleep
        await run.undo(step)
        assert "NetworkingEnabled=true" in network.state_file()

        step = await run.step("set_wifi_enabled", enabled=False)
        assert "WirelessEnabled=false" in network.state_file()
        await run.undo(step)
        assert "WirelessEnabled=true" in network.state_file()


def test_every_call_matches_the_interface_xml() -> None:
    """The Wi-Fi tools need a Wi-Fi device, which the test's network has not: like every other call of the
    entry, they are checked against the interface XML NetworkManager ships."""
    assert check_file(LIBRARY / APP / "aai.json", known_interfaces()) == []

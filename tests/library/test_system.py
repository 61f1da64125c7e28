"""Library entries for system services, run for real: Debian's daemons on a private system bus.

Each daemon runs in its own mount namespace with /etc and /var/lib overlaid (tests/system_bus.py), so
what it changes is read back from the files it wrote there, the second channel beside the bus; this
machine's own files and its real system bus are never touched. The installed gateway is driven with
the MCP SDK client through `aai_exec`.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.library.library_gateway import driving
from tests.support import Bus
from tests.system_bus import Isolated, SystemServices, system_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

POLKIT = ["/usr/lib/polkit-1/polkitd", "--no-debug"]
SYSTEMD = Path("/lib/systemd")


def gateway_env(system_bus: Bus, home: Path) -> dict[str, str]:
    return system_env(system_bus, HOME=str(home), AAI_PLATFORM="linux")


def start(services: SystemServices, name: str, argv: list[str]) -> Isolated:
    isolated = services.ensure(name, argv)
    assert isolated is not None
    return isolated


def os_release(key: str) -> str:
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith(key + "="):
            return line.split("=", 1)[1].strip('"')
    raise KeyError(key)


async def test_hostname(system_bus: Bus, system_services: SystemServices, tmp_path: Path) -> None:
    app = "org.freedesktop.hostname1"
    daemon = start(system_services, app, [str(SYSTEMD / "systemd-hostnamed")])
    machine_hostname = Path("/etc/hostname").read_text() if Path("/etc/hostname").exists() else None
    async with driving(app, tmp_path, lambda home: gateway_env(system_bus, home)) as run:
        info = await run("system_info")
        assert info["KernelRelease"] == os.uname().release
        assert info["OperatingSystemPrettyName"] == os_release("PRETTY_NAME")
        described = await run("describe")  # hostnamed's JSON text, which the gateway passes on as it is
        assert described["KernelRelease"] == os.uname().release
        assert described["StaticHostname"] == info["StaticHostname"]

        assert await run("set_pretty_hostname", name="Anna's Laptop") is None
        assert "PRETTY_HOSTNAME=" in daemon.written("/etc/machine-info").read_text()
        assert "Anna's Laptop" in daemon.written("/etc/machine-info").read_text()
        assert await run("set_static_hostname", hostname="aai-library-test") is None
        assert daemon.written("/etc/hostname").read_text().strip() == "aai-library-test"
        after = await run("system_info")
        assert (after["PrettyHostname"], after["StaticHostname"]) == ("Anna's Laptop", "aai-library-test")

        kind, detail = await run.error("set_static_hostname", hostname="not a host name")
        assert kind == "INVALID_PARAMS"
        assert "hostname" in detail
    assert (Path("/etc/hostname").read_text() if Path("/etc/hostname").exists() else None) == machine_hostname


async def test_timedate(system_bus: Bus, system_services: SystemServices, tmp_path: Path) -> None:
    app = "org.freedesktop.timedate1"
    daemon = start(system_services, app, [str(SYSTEMD / "systemd-timedated")])
    async with driving(app, tmp_path, lambda home: gateway_env(system_bus, home)) as run:
        zone = await run("timezone")
        localtime = Path("/etc/localtime")
        assert zone == (str(localtime.readlink()).split("zoneinfo/")[-1] if localtime.is_symlink() else "")
        now = await run("current_time")
        assert abs(now / 1_000_000 - time.time()) < 60
        assert isinstance(await run("local_rtc"), bool)
        assert isinstance(await run("ntp_synchronized"), bool)
        if Path("/proc/1/comm").read_text().strip() == "systemd":
            assert isinstance(await run("ntp_enabled"), bool)
        else:  # timedated asks systemd for its NTP unit: without systemd as PID 1 it says so
            kind, detail = await run.error("ntp_enabled")
            assert (kind, "property NTP") == ("AUTOMATION_FAILED", detail.split(" on ")[0].split(".")[-1])
        zones = await run("list_timezones")
        assert {"Europe/Berlin", "Asia/Tokyo", "Africa/Abidjan"} <= set(zones)
        # Zones of UTC all year round: the daemon cannot set the kernel's zone anyway (see tests/system_bus.py).
        target = "Africa/Abidjan" if zone != "Africa/Abidjan" else "Atlantic/Reykjavik"

        assert await run("set_timezone", timezone=target) is None
        assert str(daemon.written("/etc/localtime").readlink()).endswith("zoneinfo/" + target)
        assert await run("timezone") == target
        kind, detail = await run.error("set_timezone", timezone="Mars/Olympus_Mons")
        assert kind == "AUTOMATION_FAILED"
        assert "Mars/Olympus_Mons" in detail


async def test_locale(system_bus: Bus, system_services: SystemServices, tmp_path: Path) -> None:
    app = "org.freedesktop.locale1"
    daemon = start(system_services, app, [str(SYSTEMD / "systemd-localed")])
    async with driving(app, tmp_path, lambda home: gateway_env(system_bus, home)) as run:
        settings = await run("locale_settings")
        assert {"Locale", "X11Layout", "VConsoleKeymap"} <= set(settings)

        assert await run("set_locale", locale=["LANG=C.UTF-8", "LC_TIME=C"]) is None
        written = daemon.written("/etc/default/locale").read_text()
        assert "LANG=C.UTF-8" in written
        assert "LC_TIME=C\n" in written
        assert await run("set_keyboard_layout", layout="fr", variant="azerty") is None
        keyboard = daemon.written("/etc/default/keyboard").read_text()
        assert "XKBLAYOUT=fr\n" in keyboard
        assert "XKBVARIANT=azerty\n" in keyboard
        after = await run("locale_settings")
        assert (after["X11Layout"], after["X11Variant"]) == ("fr", "azerty")
        assert set(after["Locale"]) == {"LANG=C.UTF-8", "LC_TIME=C"}


async def test_accounts(system_bus: Bus, system_services: SystemServices, tmp_path: Path) -> None:
    app = "org.freedesktop.accounts"
    system_services.ensure("org.freedesktop.PolicyKit1", POLKIT, isolated=False)
    daemon = start(system_services, "org.freedesktop.Accounts", ["/usr/libexec/accounts-daemon"])
    async with driving(app, tmp_path, lambda home: gateway_env(system_bus, home)) as run:
        users = await run("list_users")
        assert all(u.startswith("/org/freedesktop/Accounts/User") for u in users)
        root = await run("find_user_by_name", name="root")
        assert root == "/org/freedesktop/Accounts/User0"
        assert await run("find_user_by_id", uid=0) == root
        info = await run("user_info", user=root)
        assert (info["UserName"], info["Uid"], info["HomeDirectory"]) == ("root", 0, "/root")

        assert await run("set_real_name", user=root, name="Root Tester") is None
        [line] = [x for x in daemon.written("/etc/passwd").read_text().splitlines() if x.startswith("root:")]
        assert line.split(":")[4] == "Root Tester"
        assert await run("set_email", user=root, email="root@example.org") is None
        stored = daemon.written("/var/lib/AccountsService/users/root").read_text()
        assert "Email=root@example.org" in stored
        after = await run("user_info", user=root)
        assert (after["RealName"], after["Email"]) == ("Root Tester", "root@example.org")

        step = await run.step("set_real_name", user=root, name="Someone Else")  # as a plan runs it, then undone
        assert step.undo_args() == {"user": root, "name": "Root Tester"}
        assert (await run("user_info", user=root))["RealName"] == "Someone Else"
        await run.undo(step)
        [line] = [x for x in daemon.written("/etc/passwd").read_text().splitlines() if x.startswith("root:")]
        assert line.split(":")[4] == "Root Tester"

        kind, detail = await run.error("find_user_by_name", name="no-such-user-here")
        assert kind == "AUTOMATION_FAILED"
        assert "no-such-user-here" in detail
    assert "Root Tester" not in Path("/etc/passwd").read_text()


async def test_power_profiles(system_bus: Bus, system_services: SystemServices, tmp_path: Path) -> None:
    app = "net.hadess.powerprofiles"
    system_services.ensure("org.freedesktop.PolicyKit1", POLKIT, isolated=False)
    start(system_services, "net.hadess.PowerProfiles", ["/usr/libexec/power-profiles-daemon"])

    def powerprofilesctl(*args: str) -> str:
        done = subprocess.run(
            ["powerprofilesctl", *args], env=system_env(system_bus), capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    async with driving(app, tmp_path, lambda home: gateway_env(system_bus, home)) as run:
        state = await run("power_profiles")
        assert state["ActiveProfile"] == powerprofilesctl("get") == "balanced"
        assert {p["Profile"] for p in state["Profiles"]} >= {"power-saver", "balanced"}

        assert await run("set_power_profile", profile="power-saver") is None
        assert powerprofilesctl("get") == "power-saver"
        assert (await run("power_profiles"))["ActiveProfile"] == "power-saver"
        assert await run("set_power_profile", profile="balanced") is None
        assert powerprofilesctl("get") == "balanced"
        kind, _ = await run.error("set_power_profile", profile="turbo")
        assert kind == "INVALID_PARAMS"

        step = await run.step("set_power_profile", profile="power-saver")  # as a plan runs it, then undone
        assert step.before["ActiveProfile"] == "balanced"
        assert powerprofilesctl("get") == "power-saver"
        assert step.undo_args() == {"profile": "balanced"}
        await run.undo(step)
        assert powerprofilesctl("get") == "balanced"

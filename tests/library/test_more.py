"""Library entries run for real: avahi-daemon and colord from Debian on a private system bus.

Each daemon runs in its own mount namespace (tests/system_bus.py) with /etc overlaid and /run a fresh
tmpfs, so what they write stays there. What a changing tool did is read back through a second channel beside
the bus: avahi-daemon's own log, colord's database file and its command line client colormgr.
"""

from __future__ import annotations

import shlex
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.library.library_gateway import driving
from tests.support import Bus, wait_until
from tests.system_bus import SystemServices, system_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

POLKIT = ["/usr/lib/polkit-1/polkitd", "--no-debug"]
ICC = "/usr/share/color/icc/colord"

PRINTER = "AAI Test Printer"
SERVICE = f"""<?xml version="1.0" standalone='no'?>
<service-group>
  <name>{PRINTER}</name>
  <service><type>_ipp._tcp</type><port>6310</port><txt-record>ty=Test Model 9</txt-record></service>
</service-group>
"""


async def test_avahi(system_bus: Bus, system_services: SystemServices, tmp_path: Path) -> None:
    app = "org.freedesktop.avahi"
    script = (
        "mount -t tmpfs none /run && mkdir -p /etc/avahi/services && "
        f"printf %s {shlex.quote(SERVICE)} > /etc/avahi/services/aai-test.service && "
        "exec avahi-daemon --no-drop-root --no-chroot --no-rlimits --no-proc-title"
    )
    daemon = system_services.ensure("org.freedesktop.Avahi", ["sh", "-c", script])
    assert daemon is not None
    log = daemon.root / "stderr"
    wait_until(lambda: "Server startup complete" in log.read_text(), 20, "avahi-daemon announcing itself")

    def env(home: Path) -> dict[str, str]:
        return system_env(system_bus, HOME=str(home), AAI_PLATFORM="linux")

    async with driving(app, tmp_path, env) as run:
        name = await run("host_name")
        assert f"Host name is {name}.local." in log.read_text()
        assert await run("host_name_fqdn") == f"{name}.local"
        assert await run("domain_name") == "local"
        assert (await run("version")).startswith("avahi ")
        assert await run("state") == 2  # running

        resolved = await run("resolve_service", name=PRINTER, type="_ipp._tcp")
        assert resolved[2:5] == [PRINTER, "_ipp._tcp", "local"]
        assert (resolved[5], resolved[8]) == (f"{name}.local", 6310)
        assert bytes(resolved[9][0]) == b"ty=Test Model 9"
        interface = await run("interface_name", index=resolved[0])
        assert interface in {"lo", *(p.name for p in Path("/sys/class/net").iterdir())}
        by_name = await run("resolve_host_name", name=f"{name}.local")
        assert by_name[2] == f"{name}.local"
        back = await run("resolve_address", address=by_name[4])
        assert back[4] == f"{name}.local"

        assert await run("set_host_name", name="aai-avahi-test") is None
        wait_until(lambda: "Changing host name to 'aai-avahi-test'" in log.read_text(), 10, "the new name")
        assert await run("host_name_fqdn") == "aai-avahi-test.local"
        kind, detail = await run.error("set_host_name", name="not a name!")
        assert kind == "INVALID_PARAMS"
        assert "name" in detail


def colormgr(system_bus: Bus, *args: str) -> str:
    done = subprocess.run(["colormgr", *args], env=system_env(system_bus), capture_output=True, text=True, check=True)
    return done.stdout


def profiles_by_file(listing: str) -> dict[str, str]:
    """Object paths of colormgr's get-profiles listing, by profile file."""
    found: dict[str, str] = {}
    for block in listing.split("\n\n"):
        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
        if "Object Path" in fields and "Filename" in fields:
            found[fields["Filename"].strip()] = fields["Object Path"].strip()
    return found


async def test_colord(system_bus: Bus, system_services: SystemServices, tmp_path: Path) -> None:
    app = "org.freedesktop.colormanager"
    system_services.ensure("org.freedesktop.PolicyKit1", POLKIT, isolated=False)
    daemon = system_services.ensure("org.freedesktop.ColorManager", ["/usr/libexec/colord"])
    assert daemon is not None
    colormgr(system_bus, "create-device", "aai-display", "disk", "display")
    files = profiles_by_file(colormgr(system_bus, "get-profiles"))
    srgb, adobe = files[f"{ICC}/sRGB.icc"], files[f"{ICC}/AdobeRGB1998.icc"]
    colormgr(system_bus, "device-add-profile", "aai-display", srgb)
    colormgr(system_bus, "device-add-profile", "aai-display", adobe)

    def env(home: Path) -> dict[str, str]:
        return system_env(system_bus, HOME=str(home), AAI_PLATFORM="linux")

    async with driving(app, tmp_path, env) as run:
        device = await run("find_device", device_id="aai-display")
        assert device == "/org/freedesktop/ColorManager/devices/aai_display"
        assert device in await run("list_devices")
        assert await run("list_devices_of_kind", kind="display") == [device]
        assert await run("list_devices_of_kind", kind="printer") == []
        info = await run("device_info", device=device)
        assert (info["DeviceId"], info["Kind"], set(info["Profiles"])) == ("aai-display", "display", {srgb, adobe})
        assert set(await run("list_profiles")) == set(files.values())
        profile = await run("profile_info", profile=adobe)
        assert (profile["Filename"], profile["Colorspace"]) == (f"{ICC}/AdobeRGB1998.icc", "rgb")

        other = srgb if info["Profiles"][0] == adobe else adobe
        assert await run("set_default_profile", device=device, profile=other) is None
        assert other in colormgr(system_bus, "device-get-default-profile", "aai-display")
        with sqlite3.connect(daemon.written("/var/lib/colord/mapping.db")) as db:
            rows = db.execute("SELECT profile, timestamp FROM mappings_v2 WHERE device = 'aai-display'").fetchall()
        # colord keeps when each profile was last made the device's own (in microseconds): the newest is in use
        assert max(rows, key=lambda row: row[1])[0] == "icc-" + other.rsplit("icc_", 1)[1], rows
        assert (await run("device_info", device=device))["Profiles"][0] == other

        kind, detail = await run.error("find_device", device_id="no-such-display")
        assert kind == "AUTOMATION_FAILED"
        assert "no-such-display" in detail

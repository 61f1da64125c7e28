"""The UPower entry run for real: Debian's upowerd on a private system bus, over a faked kernel.

upowerd reads its AC adapter and battery from sysfs and hears of changes by uevents; here both come from a
umockdev testbed (tests/umockdev.py), as in upower's own test suite, so the test can pull the plug and drain
the battery. The daemon runs in its own mount namespace with /etc and /var/lib overlaid (tests/system_bus.py),
so its history files stay there. The installed gateway is driven with the MCP SDK client: `aai_exec` reads,
`aai_wait` waits for the entry's events while the testbed changes.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session
from tests.library.library_gateway import driving, library_home
from tests.library.waiting import waiting
from tests.support import Bus
from tests.system_bus import SystemServices, system_env
from tests.umockdev import Sysfs, missing

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "org.freedesktop.upower"
UPOWERD = "/usr/libexec/upowerd"
ROOT = "/org/freedesktop/UPower/devices"
BATTERY = {
    "type": "Battery",
    "present": "1",
    "status": "Charging",
    "energy_full": "60000000",  # µWh: 60 Wh
    "energy_full_design": "80000000",
    "energy_now": "48000000",  # 80 % of full
    "voltage_now": "12000000",
    "model_name": "AAI Test Battery",
}


@pytest.fixture(scope="module")
def testbed(system_services: SystemServices, workdir: Path) -> Iterator[Sysfs]:
    """upowerd, once for the module, over a testbed with the AC plugged in and a battery at 80 %, charging."""
    problem = missing() or (None if Path(UPOWERD).exists() else f"{UPOWERD} is not installed (Debian package upower)")
    if problem is not None:
        pytest.skip(problem)
    bed = Sysfs(workdir / "umockdev")
    bed.add("power_supply", "AC", {"type": "Mains", "online": "1"})
    bed.add("power_supply", "BAT0", BATTERY)
    system_services.ensure("org.freedesktop.UPower", ["umockdev-wrapper", UPOWERD, "-v"], env=bed.env())
    yield bed
    shutil.rmtree(bed.root, ignore_errors=True)


def env(system_bus: Bus, home: Path) -> dict[str, str]:
    return system_env(system_bus, HOME=str(home), AAI_PLATFORM="linux")


async def test_reads_the_battery_and_the_power_supply(system_bus: Bus, testbed: Sysfs, tmp_path: Path) -> None:
    async with driving(APP, tmp_path, lambda home: env(system_bus, home)) as run:
        assert set(await run("list_devices")) == {f"{ROOT}/line_power_AC", f"{ROOT}/battery_BAT0"}
        status = await run("power_status")
        assert status["OnBattery"] is False
        assert status["DaemonVersion"]
        battery = await run("battery")  # the display device: every battery combined
        assert (battery["Percentage"], battery["State"], battery["IsPresent"]) == (80.0, 1, True)
        info = await run("device_info", device=f"{ROOT}/battery_BAT0")
        assert (info["Type"], info["NativePath"], info["Model"]) == (2, "BAT0", "AAI Test Battery")
        assert (info["EnergyFull"], info["EnergyFullDesign"], info["Capacity"]) == (60.0, 80.0, 75.0)
        assert (await run("device_info", device=f"{ROOT}/line_power_AC"))["Online"] is True
        assert await run("critical_action") in {"PowerOff", "Hibernate", "HybridSleep"}
        history = await run("battery_history", device=f"{ROOT}/battery_BAT0", kind="charge")
        assert all(len(row) == 3 for row in history)
        kind, detail = await run.error("device_info", device=f"{ROOT}/battery_BAT9")
        assert kind == "AUTOMATION_FAILED"
        assert "battery_BAT9" in detail


async def test_waits_for_the_plug_to_be_pulled_and_the_battery_to_drain(
    system_bus: Bus, testbed: Sysfs, tmp_path: Path
) -> None:
    """aai_wait for each of the entry's events, pending while the testbed's AC goes offline (a uevent, as the
    kernel sends one) and its battery's charge falls: what upowerd really emits matches the entry's events."""
    home = library_home(tmp_path / "home", APP)
    async with stdio_session(env(system_bus, home), tmp_path / "stderr.log") as session:
        on_battery = "onBattery == `true`"
        async with (
            waiting(session, app=APP, event="on_battery_changed", filter=on_battery, timeout=60) as unplug,
            waiting(session, app=APP, event="battery_state_changed", timeout=60) as discharging,
        ):
            testbed.set("AC", "online", "0")
            testbed.set("BAT0", "status", "Discharging")
            assert testbed.uevent("AC") > 0
        assert (await unplug.answer())["payload"] == {"onBattery": True}
        assert (await discharging.answer())["payload"] == {"state": 2}

        async with waiting(session, app=APP, event="battery_level_changed", timeout=60) as drained:
            testbed.set("BAT0", "energy_now", "30000000")
            testbed.uevent("BAT0")
        assert (await drained.answer())["payload"] == {"percentage": 50.0}

        async with waiting(session, app=APP, event="on_battery_changed", timeout=60) as plugged:
            testbed.set("AC", "online", "1")
            testbed.set("BAT0", "status", "Charging")
            testbed.uevent("AC")
        assert (await plugged.answer())["payload"] == {"onBattery": False}

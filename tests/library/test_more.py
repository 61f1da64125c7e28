"""Library entries for network services, run for real: avahi-daemon from Debian on a private system bus.

The daemon runs in its own mount namespace (tests/system_bus.py) with /etc overlaid and /run a fresh
tmpfs, so the service it announces and the pid file it writes stay there. What a changing tool did is read
back from the daemon's own log, the second channel beside the bus.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.library.library_gateway import driving
from tests.support import Bus, wait_until
from tests.system_bus import SystemServices, system_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

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

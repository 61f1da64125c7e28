"""System services from Debian on a private bus of the system type, changing nothing on this machine.

Each daemon runs in its own mount and host-name namespace (and network namespace, for a daemon that would
manage the network) where /etc and /var/lib are overlays, without the
capabilities to set the clock or reboot: what it
writes (/etc/machine-info, /etc/default/locale, /etc/passwd, ...) lands in the overlay's upper folder, which
a test reads as the second channel, and the machine's own files stay as they are. That needs root and
mount namespaces; where either is missing the tests that start such daemons are skipped, never run
against the real files. The daemons reach the bus through DBUS_SYSTEM_BUS_ADDRESS; the real system bus is
never touched.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from tests.support import Bus, stop, wait_until

OVERLAID = ("/etc", "/var/lib")
DROPPED = "-sys_time,-sys_boot"
"""Capabilities the daemons lose: no namespace holds the kernel's clock or its time zone (timedated tells the
kernel a new zone, and the first such call since boot moves the clock by the zone's offset), nor a reboot."""


def system_env(system: Bus, session: Bus | None = None, **extra: str) -> dict[str, str]:
    """The environment of a process on the private system bus (and the private session bus, if given)."""
    env = dict(os.environ)
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    env["DBUS_SYSTEM_BUS_ADDRESS"] = system.address
    if session is not None:
        env["DBUS_SESSION_BUS_ADDRESS"] = session.address
    env.update(extra)
    return env


@cache
def isolation_problem() -> str | None:
    """Why daemons cannot be run in an overlay namespace here, or None when they can."""
    if os.geteuid() != 0:
        return "the system daemons run as root, and these tests are not"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(
        ["unshare", "--mount", "--uts", "--propagation", "private", "mount", "-t", "tmpfs", "none", "/mnt"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"this machine gives no private mount namespace: {probe.stderr.strip()}"
    return None


class Isolated:
    """One daemon in its own namespace whose /etc and /var/lib are overlays kept under `root`."""

    def __init__(self, argv: Sequence[str], root: Path, env: dict[str, str], *, network: bool = False) -> None:
        """`network` gives the daemon a network namespace of its own too, holding only a loopback device."""
        self.root = root
        mounts = []
        for lower in OVERLAID:
            upper, work = self.upper(lower), root / "work" / lower.strip("/").replace("/", "_")
            upper.mkdir(parents=True, exist_ok=True)
            work.mkdir(parents=True, exist_ok=True)
            options = shlex.quote(f"lowerdir={lower},upperdir={upper},workdir={work}")
            mounts.append(f"mount -t overlay overlay -o {options} {lower}")
        script = " && ".join(mounts) + f' && exec setpriv --bounding-set={DROPPED} --inh-caps={DROPPED} "$@"'
        spaces = ["--mount", "--uts", "--net"] if network else ["--mount", "--uts"]
        with (root / "stderr").open("ab") as log:
            self.proc: subprocess.Popen[bytes] = subprocess.Popen(
                ["unshare", *spaces, "--propagation", "private", "sh", "-c", script, "sh", *argv],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )

    def upper(self, lower: str) -> Path:
        return self.root / "upper" / lower.strip("/").replace("/", "_")

    def written(self, path: str) -> Path:
        """Where the daemon's own write of `path` (under /etc or /var/lib) is kept."""
        lower = next(d for d in OVERLAID if path.startswith(d + "/"))
        return self.upper(lower) / path.removeprefix(lower + "/")

    def stop(self) -> None:
        stop(self.proc)


class SystemServices:
    """Daemons on one private system bus, each started on first use and again if it left on being idle
    (systemd's hostnamed, timedated and localed exit after 30 idle seconds)."""

    def __init__(self, bus: Bus, workdir: Path) -> None:
        self.bus = bus
        self.workdir = workdir
        self.running: dict[str, Any] = {}

    def ensure(
        self,
        name: str,
        argv: Sequence[str],
        *,
        isolated: bool = True,
        env: Mapping[str, str] | None = None,
        network: bool = False,
    ) -> Isolated | None:
        """Start `argv`, which owns `name`, unless `name` is on the bus; its overlay (None when not isolated).
        `env` adds to the daemon's environment; `network` isolates its network too (see `Isolated`)."""
        started = self.running.get(name)
        if started is not None and self.bus.has_owner(name):
            return started if isinstance(started, Isolated) else None
        if started is not None:
            started.stop()
        environ = system_env(self.bus, None, **(env or {}))
        if isolated:
            started = Isolated(argv, self.workdir / name, environ, network=network)
        else:
            started = subprocess.Popen(list(argv), env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.running[name] = started
        process = started.proc if isinstance(started, Isolated) else started

        def on_bus() -> bool:
            assert process.poll() is None, f"{argv[0]} exited with {process.returncode}"
            return self.bus.has_owner(name)

        wait_until(on_bus, 20, f"{name} on the private system bus")
        return started if isinstance(started, Isolated) else None

    def stop(self) -> None:
        for started in self.running.values():
            if isinstance(started, Isolated):
                started.stop()
            else:
                stop(started)
        self.running.clear()

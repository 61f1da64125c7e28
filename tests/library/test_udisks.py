"""The UDisks2 entry run for real: Debian's udisksd on a private system bus, noticing loop devices.

udisksd learns of block devices from udev, so a systemd-udevd runs too, in a mount namespace of its own
where /etc and /var/lib are overlays (tests/system_bus.py), /dev an overlay and /run and /media fresh
tmpfs; udisksd joins that namespace. The udev rules there are one line (blkid for loop devices): the
machine's own rules never run, what udevd writes (its database, /dev/block links) stays in the namespace,
and a mount udisksd makes is seen only there. The test sets up a real loop device over an ext4 image with
losetup and detaches it again; the installed gateway is driven with the MCP SDK client through `aai_exec`
and `aai_wait`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session
from tests.library.interface_check import check_file, known_interfaces
from tests.library.library_gateway import LIBRARY, driving, library_home
from tests.library.waiting import waiting
from tests.support import Bus, until, wait_until
from tests.system_bus import Isolated, SystemServices, system_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "org.freedesktop.udisks2"
UDISKSD = "/usr/libexec/udisks2/udisksd"
UDEVD = "/lib/systemd/systemd-udevd"
BLOCKS = "/org/freedesktop/UDisks2/block_devices"
LABEL = "AAI-DISK"
RULES = 'SUBSYSTEM=="block", KERNEL=="loop*", IMPORT{builtin}="blkid"'
NAMESPACE = (
    "mount -t tmpfs none /run && mount -t tmpfs none /media && mount -t tmpfs none /mnt"
    " && mkdir /mnt/dev /mnt/work && mount -t overlay overlay -o lowerdir=/dev,upperdir=/mnt/dev,workdir=/mnt/work /dev"
    " && mount -t tmpfs none /usr/lib/udev/rules.d"
    " && mkdir -p /etc/udev/rules.d && mount -t tmpfs none /etc/udev/rules.d"
    f" && echo '{RULES}' > /etc/udev/rules.d/50-loop.rules && exec {UDEVD}"
)


def missing() -> str | None:
    if not Path("/dev/loop-control").exists():
        return "/dev/loop-control is missing: this machine gives no loop devices"
    for command, package in (
        (UDISKSD, "udisks2"),
        (UDEVD, "systemd"),
        ("losetup", "mount"),
        ("mkfs.ext4", "e2fsprogs"),
        ("nsenter", "util-linux"),
    ):
        if shutil.which(command) is None:
            return f"{command} is not installed (Debian package {package})"
    return None


@dataclass
class Disks:
    udevd: Isolated
    image: Path

    @staticmethod
    def free() -> tuple[str, str]:
        """A loop device no one uses: its /dev path and udisksd's object path for it."""
        device = subprocess.run(["losetup", "--find"], capture_output=True, text=True, check=True).stdout.strip()
        return device, f"{BLOCKS}/{Path(device).name}"

    def attach(self, device: str) -> None:
        subprocess.run(["losetup", device, str(self.image)], check=True)

    @staticmethod
    def detach(device: str) -> None:
        subprocess.run(["losetup", "--detach", device], check=True)

    def unheard(self) -> str | None:
        """Why udevd cannot hear of loop devices here, or None: the kernel tells only its first network
        namespace of them (a container has its own), and only udevd's database makes udisksd look."""
        device, _ = self.free()
        number = Path(f"/sys/class/block/{Path(device).name}/dev").read_text().strip()
        handled = Path(f"/proc/{self.udevd.proc.pid}/root/run/udev/data/b{number}")
        self.attach(device)
        try:
            wait_until(handled.exists, 10, f"systemd-udevd to handle {device}")
        except TimeoutError:
            return f"systemd-udevd never heard of {device} from the kernel (a network namespace not the first?)"
        finally:
            self.detach(device)
        return None


@pytest.fixture(scope="module")
def disks(system_services: SystemServices, workdir: Path) -> Iterator[Disks]:
    """systemd-udevd and udisksd, once for the module, and a 16 MB ext4 image to attach."""
    problem = missing()
    if problem is not None:
        pytest.skip(problem)
    image = workdir / "disk.img"
    with image.open("wb") as file:
        file.truncate(16 * 1024 * 1024)
    subprocess.run(["mkfs.ext4", "-q", "-L", LABEL, str(image)], check=True)
    udevd = Isolated(["sh", "-c", NAMESPACE], workdir / "udevd", system_env(system_services.bus))
    try:
        control = Path(f"/proc/{udevd.proc.pid}/root/run/udev/control")  # the namespace's /run, seen from here

        def listening() -> bool:
            assert udevd.proc.poll() is None, f"systemd-udevd exited: {(udevd.root / 'stderr').read_text()[-500:]}"
            return control.exists()

        wait_until(listening, 20, "systemd-udevd listening")
        disks = Disks(udevd, image)
        problem = disks.unheard()
        if problem is not None:
            pytest.skip(problem)
        inside = ["nsenter", f"--target={udevd.proc.pid}", "--mount", "--uts"]
        system_services.ensure("org.freedesktop.UDisks2", [*inside, UDISKSD, "--no-sigint"], isolated=False)
        yield disks
    finally:
        udevd.stop()


def env(system_bus: Bus, home: Path) -> dict[str, str]:
    return system_env(system_bus, HOME=str(home), AAI_PLATFORM="linux")


async def test_waits_for_a_loop_device_to_come_and_go(system_bus: Bus, disks: Disks, tmp_path: Path) -> None:
    """aai_wait for drive_added, pending while losetup attaches the ext4 image, gets the loop device's object
    and its filesystem; drive_removed, pending while losetup detaches it, gets the filesystem gone."""
    device, block = disks.free()
    home = library_home(tmp_path / "home", APP)
    async with stdio_session(env(system_bus, home), tmp_path / "stderr.log") as session:
        ours = f"object == '{block}'"
        async with waiting(session, app=APP, event="drive_added", filter=ours, timeout=60) as added:
            disks.attach(device)
        try:
            payload = (await added.answer())["payload"]
            assert payload["object"] == block
            assert "org.freedesktop.UDisks2.Filesystem" in payload["interfaces"]
        finally:
            async with waiting(session, app=APP, event="drive_removed", filter=ours, timeout=60) as removed:
                disks.detach(device)
        payload = (await removed.answer())["payload"]
        assert payload == {"object": block, "interfaces": ["org.freedesktop.UDisks2.Filesystem"]}


def has_filesystem(bus: Bus, block: str) -> bool:
    """Whether udisksd shows a filesystem on `block` (it does once udevd has handled the device)."""
    done = subprocess.run(
        ["busctl", f"--address={bus.address}", "introspect", "org.freedesktop.UDisks2", block],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0 and b"org.freedesktop.UDisks2.Filesystem" in done.stdout


def mounted(pid: int, where: str) -> bool:
    """Whether `where` is a mount point in the mount namespace of process `pid`."""
    return any(line.split()[4] == where for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines())


def text(raw: list[int]) -> str:
    """A bytestring property (DBus `ay`, NUL-terminated) as text."""
    return bytes(raw).rstrip(b"\0").decode()


async def test_reads_mounts_and_unmounts_a_loop_device(system_bus: Bus, disks: Disks, tmp_path: Path) -> None:
    """Every read-only tool on a loop device holding the ext4 image; mount, unmount and their undos, each
    seen in the mount table of udisksd's namespace (and never in this machine's own)."""
    device, block = disks.free()
    udisksd = system_bus.owner_pid("org.freedesktop.UDisks2")
    assert udisksd is not None
    where = f"/media/root/{LABEL}"
    disks.attach(device)
    try:
        await until(lambda: has_filesystem(system_bus, block), 20, f"udisksd to see the filesystem on {device}")
        async with driving(APP, tmp_path, lambda home: env(system_bus, home)) as run:
            assert block in await run("list_block_devices")
            assert await run("resolve_device", device=device) == [block]
            info = await run("block_info", block=block)
            assert (info["IdLabel"], info["IdType"], info["Size"]) == (LABEL, "ext4", 16 * 1024 * 1024)
            assert text(info["Device"]) == device
            assert info["Drive"] == "/"  # a loop device is no drive: drive_info answers for one that is not there
            kind, detail = await run.error("drive_info", drive="/org/freedesktop/UDisks2/drives/none")
            assert kind == "AUTOMATION_FAILED"
            assert "drives/none" in detail
            assert (await run("filesystem_info", block=block))["MountPoints"] == []

            assert await run("mount", block=block) == where
            assert mounted(udisksd, where)
            assert not mounted(os.getpid(), where)
            assert [text(m) for m in (await run("filesystem_info", block=block))["MountPoints"]] == [where]
            assert await run("unmount", block=block) is None
            assert not mounted(udisksd, where)

            step = await run.step("mount", block=block)  # as a plan runs it, then undone
            assert mounted(udisksd, step.result)
            assert step.undo_args() == {"block": block}
            await run.undo(step)
            assert not mounted(udisksd, where)
            kind, detail = await run.error("unmount", block=block)
            assert kind == "AUTOMATION_FAILED"
            assert "not mounted" in detail.lower()
    finally:
        disks.detach(device)


def test_drive_tools_match_the_interface_udisks2_is_built_from() -> None:
    """drive_info, eject and power_off need a physical drive, which a loop device is not: like every other
    call of the entry, they are checked against the interfaces recorded from libudisks2."""
    assert check_file(LIBRARY / APP / "aai.json", known_interfaces()) == []

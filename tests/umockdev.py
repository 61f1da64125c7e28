"""A faked kernel for daemons that read sysfs and listen for uevents: Debian's umockdev testbed.

A daemon started through `umockdev-wrapper` with UMOCKDEV_DIR set sees the testbed's folder as /sys, and
its netlink uevent sockets become Unix sockets `event<fd>` in that folder (umockdev's preload library). The
testbed is built here the way umockdev's own `umockdev_testbed_add_device` lays it out, and uevents are sent
in the libudev monitor format its `uevent_sender.c` sends, so no GObject binding is needed in the tests'
Python. Nothing of the machine's own /sys is read or changed.
"""

from __future__ import annotations

import shutil
import socket
import struct
from pathlib import Path

PRELOAD = "libumockdev-preload.so.0"
UDEV_MONITOR_MAGIC = 0xFEEDCAFE
HEADER = struct.Struct("=8sIIIIIIII")
"""libudev's monitor header: prefix, magic, header size, properties offset and length, subsystem and
devtype hashes, tag bloom filter (two halves)."""


def missing() -> str | None:
    """What of umockdev this machine lacks, or None."""
    if shutil.which("umockdev-wrapper") is None:
        return "umockdev-wrapper is not installed (Debian package umockdev)"
    return None


def murmur2(text: str) -> int:
    """systemd's MurmurHash2 of `text` (seed: its length), as libudev's socket filters hash a subsystem."""
    m, data = 0x5BD1E995, text.encode()
    h = len(data)
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little") * m & 0xFFFFFFFF
        k = (k ^ k >> 24) * m & 0xFFFFFFFF
        h = (h * m & 0xFFFFFFFF) ^ k
    rest = data[whole:]
    if rest:
        for shift, byte in reversed(list(enumerate(rest))):
            h ^= byte << 8 * shift
        h = h * m & 0xFFFFFFFF
    h = (h ^ h >> 13) * m & 0xFFFFFFFF
    return h ^ h >> 15


class Sysfs:
    """A testbed folder under `root`: devices in sys/devices, listed by class in sys/class."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "sys" / "devices").mkdir(parents=True, exist_ok=True)
        self.subsystems: dict[str, str] = {}

    def env(self) -> dict[str, str]:
        return {"UMOCKDEV_DIR": str(self.root)}

    def add(self, subsystem: str, name: str, attributes: dict[str, str]) -> None:
        """A device `name` of `subsystem` with its sysfs attributes (before the daemon starts: coldplugged)."""
        device = self.root / "sys" / "devices" / name
        device.mkdir()
        (device / "uevent").write_text(f"SUBSYSTEM={subsystem}\n")
        for key, value in attributes.items():
            (device / key).write_text(value + "\n")
        listed = self.root / "sys" / "class" / subsystem
        listed.mkdir(parents=True, exist_ok=True)
        (device / "subsystem").symlink_to(f"../../class/{subsystem}")
        (listed / name).symlink_to(f"../../devices/{name}")
        self.subsystems[name] = subsystem

    def set(self, name: str, attribute: str, value: str) -> None:
        (self.root / "sys" / "devices" / name / attribute).write_text(value + "\n")

    def uevent(self, name: str, action: str = "change") -> int:
        """Send `action` for device `name` to every daemon listening; how many listeners it reached."""
        subsystem = self.subsystems[name]
        fields = {"ACTION": action, "DEVPATH": f"/devices/{name}", "SUBSYSTEM": subsystem, "SEQNUM": "1"}
        properties = b"".join(f"{key}={value}".encode() + b"\0" for key, value in fields.items())
        header = HEADER.pack(
            b"libudev\0",
            socket.htonl(UDEV_MONITOR_MAGIC),
            HEADER.size,
            HEADER.size,
            len(properties),
            socket.htonl(murmur2(subsystem)),
            0,
            0,
            0,
        )
        reached = 0
        for listener in self.root.glob("event[0-9]*"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
                try:
                    sender.connect(str(listener))
                except ConnectionRefusedError:  # a socket the daemon closed
                    continue
                sender.send(header + properties)
                reached += 1
        return reached

"""The real apps `bench.workflow` drives, each started by it and stopped by its process id: mpv (with
mpv-mpris) and VLC on a private session bus, dunst on a private X display, upowerd and power-profiles-daemon
on a private system bus, transmission-daemon on a loopback port. An app that is not installed (or, for the
system daemons, cannot be isolated here) is left out with the reason, and the tasks needing it are skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_dunst import free_display
from tests.library.apps import as_unprivileged, desktop_env, started
from tests.library.library_gateway import LIBRARY, library_home
from tests.library.test_media import mpris_status
from tests.library.test_transmission import Rpc, free_port, torrent_of
from tests.support import Bus, Mpv, silent_wav, stop, wait_until
from tests.system_bus import SystemServices, isolation_problem, system_env

MPRIS = "org.mpris.mediaplayer2"
NOTIFICATIONS = "org.freedesktop.notifications"
DUNST = "org.dunstproject.dunst"
UPOWER = "org.freedesktop.upower"
PROFILES = "net.hadess.powerprofiles"
TRANSMISSION = "com.transmissionbt.transmission"
POLKIT = ["/usr/lib/polkit-1/polkitd", "--no-debug"]
PROFILES_DAEMON = Path("/usr/libexec/power-profiles-daemon")
UPOWERD = Path("/usr/libexec/upowerd")
DUNSTRC = "[global]\n    monitor = 0\n    history_length = 100000\n"
TIMEOUT = 10.0
"""Seconds any command the bench runs itself (dunstctl, dbus-send, powerprofilesctl) may take."""


def command(argv: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=True)
    return done.stdout.strip()


@dataclass
class Desktop:
    """What is running, and why what is missing is missing."""

    workdir: Path
    bus: Bus
    env: dict[str, str] = field(default_factory=dict)
    """The apps' environment on the session bus and display (for dunstctl)."""
    mpv: Mpv | None = None
    players: list[str] = field(default_factory=list)
    dunst: bool = False
    system: Bus | None = None
    rpc: Rpc | None = None
    torrent: Path | None = None
    track: Path | None = None
    missing: dict[str, str] = field(default_factory=dict)
    """App → why it is not running."""

    def apps(self) -> list[str]:
        """The library entries to install: those of the apps running."""
        apps = []
        if self.players:
            apps.append(MPRIS)
        if self.dunst:
            apps += [NOTIFICATIONS, DUNST]
        if self.system is not None:
            apps += [UPOWER, PROFILES]
        return apps

    def gateway_env(self, home: Path) -> dict[str, str]:
        """An AAI home with the running apps' entries, everything allowed; the gateway's environment on both buses."""
        library_home(home, *self.apps())
        config: dict[str, Any] = {"consent": {"default": "allow"}}
        if self.rpc is not None:  # the entry with the port this daemon listens on
            text = (LIBRARY / TRANSMISSION / "aai.json").read_text()
            (home / ".aai" / TRANSMISSION).mkdir(parents=True)
            (home / ".aai" / TRANSMISSION / "aai.json").write_text(
                text.replace("127.0.0.1:9091", f"127.0.0.1:{self.rpc.port}")
            )
            config["web"] = {"allowHttpLoopback": True}
        (home / ".aai" / "config.json").write_text(json.dumps(config))
        extra = {"HOME": str(home), "AAI_PLATFORM": "linux"}
        if self.system is not None:
            return system_env(self.system, self.bus, **extra)
        return self.bus.env(**extra)

    # what the tasks check and put back, through each app's own second channel

    def dunstctl(self, *argv: str) -> str:
        return command(["dunstctl", *argv], self.env)

    def notified(self, summary: str) -> bool:
        """Whether dunst got a notification with `summary` (shown ones are closed into the history first)."""
        self.dunstctl("close-all")
        history = json.loads(self.dunstctl("history"))
        return summary in [entry["summary"]["data"] for entry in history["data"][0]]

    def status(self, player: str) -> str:
        """A player's MPRIS PlaybackStatus, asked with dbus-send."""
        return mpris_status(self.bus, player)

    def play_all(self) -> None:
        for player in self.players:
            command(
                [
                    "dbus-send",
                    f"--bus={self.bus.address}",
                    "--print-reply",
                    f"--dest=org.mpris.MediaPlayer2.{player}",
                    "/org/mpris/MediaPlayer2",
                    "org.mpris.MediaPlayer2.Player.Play",
                ],
                self.bus.env(),
            )
        try:
            wait_until(lambda: all(self.status(p) == "Playing" for p in self.players), TIMEOUT, "every player to play")
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}: {', '.join(f'{p} {self.status(p)}' for p in self.players)}") from None

    def profile(self, *argv: str) -> str:
        assert self.system is not None
        return command(["powerprofilesctl", *argv], system_env(self.system))

    def battery(self) -> float:
        """The DisplayDevice's Percentage, asked with dbus-send (0 on a machine with no battery)."""
        assert self.system is not None
        reply = command(
            [
                "dbus-send",
                f"--bus={self.system.address}",
                "--print-reply",
                "--dest=org.freedesktop.UPower",
                "/org/freedesktop/UPower/devices/DisplayDevice",
                "org.freedesktop.DBus.Properties.Get",
                "string:org.freedesktop.UPower.Device",
                "string:Percentage",
            ],
            system_env(self.system),
        )
        return float(reply.split()[-1])

    def remove_torrents(self) -> None:
        assert self.rpc is not None
        rpc = self.rpc
        ids = [t["id"] for t in rpc.torrents()]
        if ids:
            rpc("torrent-remove", ids=ids)
            wait_until(lambda: rpc.torrents() == [], TIMEOUT, "Transmission to remove the torrents")


def missing(*commands: str) -> str | None:
    absent = [c for c in commands if shutil.which(c) is None and not Path(c).exists()]
    return f"not installed: {', '.join(absent)}" if absent else None


def attempt(desktop: Desktop, app: str, start: Callable[[], None]) -> None:
    """Start one app; a failure leaves it out with the reason instead of ending the bench."""
    try:
        start()
    except (AssertionError, OSError, TimeoutError, subprocess.SubprocessError) as exc:
        desktop.missing[app] = f"did not start: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}"


class Starter:
    """Starts each app into `found`, each registered with `running` to be stopped by its process id."""

    def __init__(self, found: Desktop, running: ExitStack, screen: str | None) -> None:
        self.found = found
        self.running = running
        self.screen = screen
        self.workdir = found.workdir
        self.bus = found.bus

    def all(self) -> None:
        starts: list[tuple[str, tuple[str, ...], Callable[[], None]]] = [
            ("mpv", ("mpv", str(Mpv.PLUGIN)), self.mpv),
            ("VLC", ("cvlc", "setpriv"), self.vlc),
            ("dunst", ("dunst", "dunstctl", "Xvfb"), self.dunst),
            ("upower, power-profiles-daemon", (str(UPOWERD), str(PROFILES_DAEMON), "powerprofilesctl"), self.system),
            ("Transmission", ("transmission-daemon",), self.transmission),
        ]
        for app, needs, start in starts:
            absent = missing(*needs)
            if absent:
                self.found.missing[app] = absent
            else:
                attempt(self.found, app, start)

    def mpv(self) -> None:
        track = str(self.found.track)
        player = Mpv(self.bus, self.workdir)
        self.running.callback(player.stop)
        player.command("loadfile", track)
        player.command("set_property", "loop-file", "inf")
        wait_until(lambda: player.property("path") == track, TIMEOUT, "mpv to load the track")
        # mpv-mpris may keep the Stopped it saw while mpv was idle until the next pause change
        player.command("set_property", "pause", True)
        player.command("set_property", "pause", False)
        self.found.mpv = player
        self.found.players.append("mpv")

    def vlc(self) -> None:
        home = self.workdir / "vlc"
        home.mkdir()
        argv = ["cvlc", "--intf", "dummy", "--control", "dbus", "--no-video", "--aout", "dummy"]
        argv += ["--no-media-library", "--loop", str(self.found.track)]
        names = ["org.mpris.MediaPlayer2.vlc"]
        env = desktop_env(self.bus, home)
        log = self.workdir / "vlc.log"
        self.running.enter_context(started(as_unprivileged(argv, home), env, log, self.bus, names))
        self.found.players.append("vlc")

    def dunst(self) -> None:
        assert self.screen is not None, "no X display for dunst"
        (self.workdir / "dunstrc").write_text(DUNSTRC)
        argv = ["dunst", "-config", str(self.workdir / "dunstrc")]
        names = ["org.freedesktop.Notifications"]
        self.running.enter_context(started(argv, self.found.env, self.workdir / "dunst.log", self.bus, names))
        self.found.dunst = True

    def system(self) -> None:
        problem = isolation_problem()
        assert problem is None, f"system daemons cannot be isolated here: {problem}"
        system_bus = Bus(self.workdir / "system-bus", kind="system")
        self.running.callback(system_bus.stop)
        services = SystemServices(system_bus, self.workdir / "system-services")
        self.running.callback(services.stop)
        services.ensure("org.freedesktop.PolicyKit1", POLKIT, isolated=False)
        services.ensure("net.hadess.PowerProfiles", [str(PROFILES_DAEMON)])
        services.ensure("org.freedesktop.UPower", [str(UPOWERD)])
        self.found.system = system_bus

    def transmission(self) -> None:
        workdir = self.workdir
        port = free_port()
        downloads = workdir / "downloads"
        downloads.mkdir()
        argv = ["transmission-daemon", "--foreground", "--config-dir", str(workdir / "transmission")]
        argv += ["--port", str(port), "--rpc-bind-address", "127.0.0.1", "--no-auth"]
        argv += ["--allowed", "127.0.0.1", "--download-dir", str(downloads), "--no-dht", "--no-lpd"]
        argv += ["--no-portmap", "--peerport", str(free_port()), "--no-incomplete-dir"]
        with (workdir / "transmission.log").open("w") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        self.running.callback(stop, proc)
        rpc = Rpc(port)
        wait_until(rpc.answers, 30, "transmission-daemon's RPC to answer")
        data = downloads / "field-notes.txt"
        data.write_bytes(b"".join(b"line %05d of the field notes\n" % i for i in range(3000)))
        self.found.torrent = torrent_of(data, workdir / "field-notes.torrent")
        self.found.rpc = rpc


@contextmanager
def desktop(workdir: Path) -> Iterator[Desktop]:
    """Every app that can run here, started; all stopped by process id on leaving."""
    workdir.mkdir(parents=True)
    for folder in (workdir, *workdir.parents[:2]):  # VLC runs as nobody when the bench runs as root
        folder.chmod(0o755)
    bus = Bus(workdir / "bus", any_user=True)
    (workdir / "bus").chmod(0o755)
    found = Desktop(workdir, bus)
    try:
        with ExitStack() as running:
            screen = None
            if not missing("Xvfb"):
                try:
                    screen = running.enter_context(free_display(workdir))
                except pytest.fail.Exception as exc:  # no free display number
                    found.missing["Xvfb"] = str(exc)
            found.env = desktop_env(bus, workdir / "apps-home", screen)
            music = workdir / "music"
            music.mkdir(mode=0o755)
            found.track = silent_wav(music / "Evening Song.wav")
            found.track.chmod(0o644)
            Starter(found, running, screen).all()
            if found.players:
                found.play_all()
            yield found
    finally:
        bus.stop()

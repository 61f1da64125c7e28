"""The MPRIS library entry against three real players on one private bus: mpv (with mpv-mpris), VLC and Audacious.

Each player is started once for the module; what the gateway did is checked through each player's own second
channel: mpv's JSON IPC socket, VLC's `oldrc` command socket and Audacious's `audtool`.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session, text_of
from tests.library.apps import as_unprivileged, desktop_env, started
from tests.library.library_gateway import Exec, gateway_env, read_only_tools
from tests.library.waiting import waiting
from tests.support import Bus, Mpv, silent_wav, until, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "org.mpris.mediaplayer2"
PLAYERS = ("audacious", "mpv", "vlc")


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    """A directory other users can reach: VLC runs as nobody when the tests run as root."""
    path = Path(tempfile.mkdtemp(prefix="aai-media-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def tracks(workdir: Path) -> list[Path]:
    folder = workdir / "music"
    folder.mkdir()
    found = [silent_wav(folder / f"track{i}.wav") for i in (1, 2)]
    for path in (folder, *found):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return found


def mpris_status(bus: Bus, player: str) -> str:
    """A player's MPRIS PlaybackStatus, asked directly with dbus-send."""
    reply = subprocess.run(
        [
            "dbus-send",
            f"--bus={bus.address}",
            "--print-reply",
            f"--dest=org.mpris.MediaPlayer2.{player}",
            "/org/mpris/MediaPlayer2",
            "org.freedesktop.DBus.Properties.Get",
            "string:org.mpris.MediaPlayer2.Player",
            "string:PlaybackStatus",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    ).stdout
    return reply.split('"')[-2]


class Vlc:
    """`cvlc` with its MPRIS control and its old remote-control interface on a unix socket."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.last = ""

    def command(self, text: str) -> str:
        """One rc command's answer, the status lines VLC pushes before it left out."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(str(self.socket_path))
            sock.sendall(text.encode() + b"\n")
            deadline = time.monotonic() + 5
            buffer = b""
            sock.settimeout(0.3)
            while time.monotonic() < deadline:
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:
                    if buffer:
                        break
                    continue
                if not chunk:
                    break
                buffer += chunk
        lines = [ln for ln in buffer.decode().splitlines() if ln and not ln.startswith("status change:")]
        self.last = buffer.decode()
        return "\n".join(lines).strip()

    def state(self) -> str:
        """ "play", "pause" or "stop": the last state `status` reports (it says none once nothing is open)."""
        self.command("status")
        states = re.findall(r"\( (play|pause|stop) state: \d+ \)", self.last)
        return states[-1] if states else "stop"


@pytest.fixture(scope="module")
def vlc(library_bus: Bus, workdir: Path) -> Iterator[Vlc]:
    home = workdir / "vlc"
    home.mkdir()
    env = desktop_env(library_bus, home)
    sock = home / "rc.sock"
    argv = ["cvlc", "--intf", "dummy", "--extraintf", "oldrc", f"--rc-unix={sock}", "--rc-fake-tty"]
    argv += ["--control", "dbus", "--no-video", "--aout", "dummy", "--no-media-library"]
    with started(as_unprivileged(argv, home), env, workdir / "vlc.log", library_bus, ["org.mpris.MediaPlayer2.vlc"]):
        wait_until(sock.exists, 10, "VLC's rc socket")
        yield Vlc(sock)


class Audacious:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def audtool(self, *args: str) -> str:
        done = subprocess.run(["audtool", *args], env=self.env, capture_output=True, text=True, check=True, timeout=10)
        return done.stdout.strip()


@pytest.fixture(scope="module")
def audacious(library_bus: Bus, workdir: Path) -> Iterator[Audacious]:
    home = workdir / "audacious"
    config = home / ".config" / "audacious"
    config.mkdir(parents=True)
    # Volume in Audacious itself (no sound card here: its output waits, so a song keeps "playing"), MPRIS on.
    (config / "config").write_text("[audacious]\nsoftware_volume_control=TRUE\n\n[mpris2]\nenabled=TRUE\n")
    env = desktop_env(library_bus, home)
    names = ["org.mpris.MediaPlayer2.audacious", "org.atheme.audacious"]
    with started(["audacious", "--headless"], env, workdir / "audacious.log", library_bus, names):
        yield Audacious(env)


@pytest.fixture(scope="module")
def mpv(library_bus: Bus, workdir: Path) -> Iterator[Mpv]:
    player = Mpv(library_bus, workdir)
    try:
        yield player
    finally:
        player.stop()


@pytest.fixture(scope="module")
def players(mpv: Mpv, vlc: Vlc, audacious: Audacious) -> tuple[Mpv, Vlc, Audacious]:
    return mpv, vlc, audacious


async def test_picks_the_player_named_playing_or_only(
    library_bus: Bus, players: tuple[Mpv, Vlc, Audacious], tracks: list[Path], tmp_path: Path
) -> None:
    mpv, vlc, _ = players
    async with stdio_session(gateway_env(library_bus, tmp_path / "home", APP), tmp_path / "stderr.log") as session:
        run = Exec(session, APP)
        assert "list_players" in await run.tools()
        # An idle mpv-mpris 0.7.1 may say "Playing" (it reads mpv's pause flag before mpv is idle); paused it
        # says "Paused" for sure.
        mpv.command("set_property", "pause", True)
        await until(lambda: mpris_status(library_bus, "mpv") == "Paused", 10, "mpv-mpris to say Paused")
        listed = await run("list_players")
        assert [p["player"] for p in listed] == list(PLAYERS)
        assert {p["player"]: p["identity"] for p in listed} == {
            "audacious": "Audacious",
            "mpv": "mpv",
            "vlc": "VLC media player",
        }
        assert listed[2]["service"] == "org.mpris.MediaPlayer2.vlc"  # not also its .instance<pid> name
        assert [p["playbackStatus"] for p in listed] == ["Stopped", "Paused", "Stopped"], listed

        kind, detail = await run.error("playback_status")
        assert kind == "INVALID_PARAMS"
        assert "3 org.mpris.MediaPlayer2.* services are running" in detail
        assert "mpv (mpv, Paused), vlc (VLC media player, Stopped)" in detail
        assert "'player' argument" in detail
        kind, detail = await run.error("play", player="rhythmbox")
        assert kind == "APP_NOT_RUNNING"
        assert "no running org.mpris.MediaPlayer2.* service matches player 'rhythmbox'" in detail
        assert "audacious (Audacious, Stopped), mpv (mpv, Paused), vlc (VLC media player, Stopped)" in detail

        assert await run("identity", player="VLC media player") == "VLC media player"  # by its label
        assert await run("identity", player="MPV") == "mpv"  # ignoring case
        names = subprocess.run(
            [
                "dbus-send",
                f"--bus={library_bus.address}",
                "--print-reply",
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.ListNames",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        instance = next(n for n in names.split('"') if ".vlc.instance" in n)
        assert await run("identity", player=instance.removeprefix("org.mpris.MediaPlayer2.")) == "VLC media player"

        # mpv-mpris 0.7.1 says "Stopped" after opening a file from idle, until paused or resumed: VLC plays here.
        await run("open_uri", player="vlc", uri=tracks[1].as_uri())
        wait_until(lambda: vlc.state() == "play", 10, "VLC to play")
        assert await run("playback_status") == "Playing"  # the one playing, without naming it
        await run("pause")
        wait_until(lambda: vlc.state() == "pause", 5, "VLC to pause")
        assert mpv.property("idle-active") is True
        assert (await run.error("play"))[0] == "INVALID_PARAMS"  # none is playing now
        await run("stop", player="vlc")
        wait_until(lambda: vlc.state() == "stop", 5, "VLC to stop")


async def test_mpv(library_bus: Bus, mpv: Mpv, tracks: list[Path], tmp_path: Path) -> None:
    async with stdio_session(gateway_env(library_bus, tmp_path / "home", APP), tmp_path / "stderr.log") as session:
        run = Exec(session, APP)
        await run("open_uri", player="mpv", uri=tracks[0].as_uri())
        wait_until(lambda: mpv.property("path") == str(tracks[0]), 10, "mpv to load the track")
        wait_until(lambda: mpv.property("time-pos") is not None, 10, "mpv to start the track")
        await run("pause", player="mpv")
        wait_until(lambda: mpv.property("pause") is True, 5, "mpv to pause")
        await run("play", player="mpv")
        wait_until(lambda: mpv.property("pause") is False, 5, "mpv to play")
        await run("play_pause", player="mpv")
        wait_until(lambda: mpv.property("pause") is True, 5, "mpv to toggle to paused")
        before = float(mpv.property("time-pos"))
        await run("seek", player="mpv", offset=10_000_000)
        wait_until(lambda: float(mpv.property("time-pos") or 0) >= before + 9, 5, "mpv to seek 10 s forward")
        metadata = await run("metadata", player="mpv")
        assert metadata["xesam:title"] == "track1.wav"
        await run("set_position", player="mpv", track_id=metadata["mpris:trackid"], position=20_000_000)
        wait_until(lambda: 19 <= float(mpv.property("time-pos") or 0) < 25, 5, "mpv to jump to 0:20")
        await run("set_volume", player="mpv", level=0.3)
        wait_until(lambda: mpv.property("volume") == 30, 5, "mpv's volume to be 30 %")
        await run("set_loop_status", player="mpv", mode="Track")
        wait_until(lambda: mpv.property("loop-file") == "inf", 5, "mpv to loop the file")

        answers = {tool: await run(tool, player="mpv") for tool in read_only_tools(APP)}
        assert answers["volume"] == pytest.approx(0.3)
        assert answers["playback_status"] == "Paused"
        assert answers["loop_status"] == "Track"
        assert isinstance(answers["shuffle"], bool)  # mpv-mpris 0.7.1 keeps no steady Shuffle; VLC and Audacious do
        assert 19_000_000 <= answers["position"] < 25_000_000
        assert answers["metadata"]["mpris:length"] == 30_000_000
        assert "https" in answers["supported_uri_schemes"]
        state = answers["player_state"]
        assert (state["PlaybackStatus"], state["LoopStatus"], state["CanSeek"]) == ("Paused", "Track", True)
        await run("stop", player="mpv")
        wait_until(lambda: mpv.property("idle-active") is True, 5, "mpv to stop")


async def test_vlc(library_bus: Bus, vlc: Vlc, tracks: list[Path], tmp_path: Path) -> None:
    async with stdio_session(gateway_env(library_bus, tmp_path / "home", APP), tmp_path / "stderr.log") as session:
        run = Exec(session, APP)
        await run("open_uri", player="vlc", uri=tracks[1].as_uri())
        wait_until(lambda: vlc.command("get_title") == "track2.wav", 10, "VLC to open the track")
        wait_until(lambda: vlc.state() == "play", 10, "VLC to play")
        await run("pause", player="vlc")
        wait_until(lambda: vlc.state() == "pause", 5, "VLC to pause")
        await run("play_pause", player="vlc")
        wait_until(lambda: vlc.state() == "play", 5, "VLC to play again")
        await run("seek", player="vlc", offset=15_000_000)
        wait_until(lambda: int(vlc.command("get_time") or 0) >= 14, 5, "VLC to seek 15 s forward")
        await run("set_loop_status", player="vlc", mode="Playlist")
        await run("set_shuffle", player="vlc", on=True)

        answers = {tool: await run(tool, player="vlc") for tool in read_only_tools(APP)}
        assert answers["identity"] == "VLC media player"
        assert answers["playback_status"] == "Playing"
        assert answers["metadata"]["xesam:url"] == tracks[1].as_uri()
        assert answers["position"] >= 14_000_000
        assert (answers["loop_status"], answers["shuffle"]) == ("Playlist", True)
        assert isinstance(answers["volume"], float)
        assert "file" in answers["supported_uri_schemes"]
        assert answers["player_state"]["CanPause"] is True
        await run("stop", player="vlc")
        wait_until(lambda: vlc.state() == "stop", 5, "VLC to stop")


async def test_audacious(library_bus: Bus, audacious: Audacious, tracks: list[Path], tmp_path: Path) -> None:
    for track in tracks:
        audacious.audtool("playlist-addurl", track.as_uri())
    wait_until(lambda: audacious.audtool("playlist-length") == "2", 10, "Audacious to list both tracks")
    async with stdio_session(gateway_env(library_bus, tmp_path / "home", APP), tmp_path / "stderr.log") as session:
        run = Exec(session, APP)
        await run("play", player="audacious")
        wait_until(lambda: audacious.audtool("playback-status") == "playing", 10, "Audacious to play")
        await run("next", player="audacious")
        wait_until(lambda: audacious.audtool("playlist-position") == "2", 5, "Audacious to skip to track 2")
        await run("previous", player="audacious")
        wait_until(lambda: audacious.audtool("playlist-position") == "1", 5, "Audacious to go back to track 1")
        await run("pause", player="Audacious")
        wait_until(lambda: audacious.audtool("playback-status") == "paused", 5, "Audacious to pause")
        kind, detail = await run.error("set_shuffle", player="audacious", on=True)
        assert (kind, detail) == (
            "AUTOMATION_FAILED",
            "org.mpris.MediaPlayer2.audacious has no property Shuffle on org.mpris.MediaPlayer2.Player",
        )
        assert audacious.audtool("playlist-shuffle-status") == "off"

        answers = {}
        for tool in read_only_tools(APP):
            if tool in ("shuffle", "loop_status"):  # Audacious's MPRIS has neither
                assert (await run.error(tool, player="audacious"))[0] == "AUTOMATION_FAILED"
            else:
                answers[tool] = await run(tool, player="audacious")
        assert answers["identity"] == "Audacious"
        assert answers["playback_status"] == "Paused"
        assert answers["metadata"]["xesam:url"] == tracks[0].as_uri()
        assert answers["player_state"]["CanGoNext"] is True
        await run("stop", player="audacious")
        wait_until(lambda: audacious.audtool("playback-status") == "stopped", 5, "Audacious to stop")


async def test_audacious_playlist(library_bus: Bus, audacious: Audacious, tracks: list[Path], tmp_path: Path) -> None:
    app = "org.atheme.audacious"
    async with stdio_session(gateway_env(library_bus, tmp_path / "home", app), tmp_path / "stderr.log") as session:
        run = Exec(session, app)
        await run("clear_playlist")
        wait_until(lambda: audacious.audtool("playlist-length") == "0", 5, "Audacious to clear its playlist")
        await run("add_songs", uris=[t.as_uri() for t in tracks])
        wait_until(lambda: audacious.audtool("playlist-length") == "2", 10, "Audacious to add both songs")
        assert audacious.audtool("playlist-song-filename", "2") == str(tracks[1])
        await run("jump_to", position=1)
        wait_until(lambda: audacious.audtool("playlist-position") == "2", 5, "Audacious to jump to song 2")
        await run("queue_song", position=0)
        wait_until(lambda: audacious.audtool("playqueue-length") == "1", 5, "Audacious to queue song 1")
        repeat = audacious.audtool("playlist-repeat-status")
        await run("toggle_repeat")
        wait_until(lambda: audacious.audtool("playlist-repeat-status") != repeat, 5, "Audacious to toggle repeat")
        shuffle = audacious.audtool("playlist-shuffle-status")
        await run("toggle_shuffle")
        wait_until(lambda: audacious.audtool("playlist-shuffle-status") != shuffle, 5, "Audacious to toggle shuffle")
        await run("set_volume", percent=40)
        wait_until(lambda: audacious.audtool("get-volume") == "40", 5, "Audacious's volume to be 40 %")
        await run("rename_playlist", name="Road trip")
        wait_until(lambda: audacious.audtool("current-playlist-name") == "Road trip", 5, "the playlist's new name")

        answers = {tool: await run(tool, position=1) if "song_" in tool else await run(tool) for tool in READ_ONLY}
        assert set(READ_ONLY) == set(read_only_tools(app))
        assert str(answers["version"]).startswith("4.")
        assert answers["status"] == audacious.audtool("playback-status")
        assert (answers["playlist_length"], answers["current_position"], answers["queue_length"]) == (2, 1, 1)
        assert answers["song_file"] == tracks[1].as_uri()
        assert answers["song_title"] == audacious.audtool("playlist-song", "2")
        assert answers["song_length"] == 30
        assert (answers["repeat"], answers["shuffle"]) == (repeat == "off", shuffle == "off")
        assert answers["volume"] == [40, 40]
        assert (answers["playlists"], answers["playlist_name"]) == (1, "Road trip")

        await run("remove_song", position=0)
        wait_until(lambda: audacious.audtool("playlist-length") == "1", 5, "Audacious to remove song 1")
        await run("new_playlist")
        wait_until(lambda: audacious.audtool("number-of-playlists") == "2", 5, "Audacious to make a playlist")
        await run("play_songs", uris=[tracks[0].as_uri()])
        wait_until(lambda: audacious.audtool("playlist-song-filename", "1") == str(tracks[0]), 5, "the new list")
        wait_until(lambda: audacious.audtool("playback-status") == "playing", 10, "Audacious to play it")
        await run("clear_playlist")
        wait_until(lambda: audacious.audtool("playlist-length") == "0", 5, "Audacious to clear its playlist")


READ_ONLY = [
    "version",
    "status",
    "playlist_length",
    "current_position",
    "song_title",
    "song_file",
    "song_length",
    "queue_length",
    "repeat",
    "shuffle",
    "volume",
    "playlists",
    "playlist_name",
]


async def test_no_player_running(bus: Bus, tmp_path: Path) -> None:
    async with stdio_session(gateway_env(bus, tmp_path / "home", APP), tmp_path / "stderr.log") as session:
        run = Exec(session, APP)
        assert await run("list_players") == []
        kind, detail = await run.error("play")
        assert (kind, detail) == (
            "APP_NOT_RUNNING",
            "no org.mpris.MediaPlayer2.* service is running on the session bus; start one (such as a media player)",
        )


async def test_mpv_volume_and_loop_are_put_back_by_their_undo(library_bus: Bus, mpv: Mpv, tmp_path: Path) -> None:
    """The entry's undo of set_volume and set_loop_status, run as a plan runs it, puts back what mpv had."""
    mpv.command("set_property", "volume", 70)
    mpv.command("set_property", "loop-playlist", "no")
    mpv.command("set_property", "loop-file", "no")
    wait_until(lambda: mpv.property("volume") == 70, 5, "mpv's volume to be 70 %")
    async with stdio_session(gateway_env(library_bus, tmp_path / "home", APP), tmp_path / "stderr.log") as session:
        run = Exec(session, APP)
        guide = text_of(await session.call_tool("app_org_mpris_mediaplayer2", {}))
        set_volume = guide.split("### set_volume\n", 1)[1].split("### ", 1)[0]
        assert "**Undo**: a plan that fails after this step undoes it with `set_volume`." in set_volume

        step = await run.step("set_volume", player="mpv", level=0.25)
        assert step.before == pytest.approx(0.7)
        wait_until(lambda: mpv.property("volume") == 25, 5, "mpv's volume to be 25 %")
        assert step.undo_args() == {"level": pytest.approx(0.7), "player": "mpv"}
        await run.undo(step)
        wait_until(lambda: mpv.property("volume") == 70, 5, "the undo to put mpv's volume back to 70 %")

        step = await run.step("set_loop_status", player="mpv", mode="Playlist")
        assert step.before == "None"
        wait_until(lambda: mpv.property("loop-playlist") == "inf", 5, "mpv to loop the playlist")
        await run.undo(step)
        wait_until(lambda: mpv.property("loop-playlist") is False, 5, "the undo to stop mpv looping the playlist")


async def test_audacious_volume_and_repeat_are_put_back_by_their_undo(
    library_bus: Bus, audacious: Audacious, tmp_path: Path
) -> None:
    app = "org.atheme.audacious"
    audacious.audtool("set-volume", "55")
    async with stdio_session(gateway_env(library_bus, tmp_path / "home", app), tmp_path / "stderr.log") as session:
        run = Exec(session, app)
        step = await run.step("set_volume", percent=20)
        assert step.before == [55, 55]
        wait_until(lambda: audacious.audtool("get-volume") == "20", 5, "Audacious's volume to be 20 %")
        await run.undo(step)
        wait_until(lambda: audacious.audtool("get-volume") == "55", 5, "the undo to put the volume back to 55 %")

        repeat = audacious.audtool("playlist-repeat-status")
        step = await run.step("toggle_repeat")
        wait_until(lambda: audacious.audtool("playlist-repeat-status") != repeat, 5, "Audacious to toggle repeat")
        await run.undo(step)
        wait_until(lambda: audacious.audtool("playlist-repeat-status") == repeat, 5, "the undo to toggle it back")


async def test_waits_for_mpv_to_change_track(library_bus: Bus, mpv: Mpv, tracks: list[Path], tmp_path: Path) -> None:
    """aai_wait for track_changed, pending while mpv loads another file over its own IPC, returns the new title;
    a filter nothing matches ends in a timeout result, not an error."""
    mpv.command("loadfile", str(tracks[0]))
    wait_until(lambda: mpv.property("path") == str(tracks[0]), 10, "mpv to load track 1")
    async with stdio_session(gateway_env(library_bus, tmp_path / "home", APP), tmp_path / "stderr.log") as session:
        new_title = "title == 'track2.wav'"
        async with waiting(session, app=APP, event="track_changed", filter=new_title, timeout=60) as wait:
            mpv.command("loadfile", str(tracks[1]))
        answer = await wait.answer()
        assert (answer["app"], answer["event"], answer["timedOut"]) == (APP, "track_changed", False)
        assert answer["payload"]["title"] == "track2.wav"
        assert answer["payload"]["url"] == tracks[1].as_uri()
        assert answer["at"].endswith("Z")

        async with waiting(session, app=APP, event="track_changed", filter="title == 'none such'", timeout=2) as wait:
            mpv.command("loadfile", str(tracks[0]))
        assert await wait.answer() == {"app": APP, "event": "track_changed", "timedOut": True}

        mpv.command("set_property", "pause", False)
        wait_until(lambda: mpv.property("pause") is False, 5, "mpv to play")
        async with waiting(session, app=APP, event="playback_changed", filter="status == 'Paused'", timeout=60) as wait:
            mpv.command("set_property", "pause", True)
        assert (await wait.answer())["payload"] == {"status": "Paused"}
    mpv.command("stop")

"""`--discover` and `--generate` for real: a private bus, the echo app and mpv, the installed command,
and the generated descriptors driven through `aai-gateway --mcp` with the SDK client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from dbus_fast.aio import MessageBus
from mcp import ClientSession

from aai_gateway.authoring.dbus_services import walk
from tests.e2e.mcp_client import stdio_session, text_of
from tests.support import (
    TEST_APPS,
    Bus,
    Mpv,
    gateway_command,
    install_descriptor,
    running,
    silent_wav,
    start_app,
    wait_until,
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ECHO = [sys.executable, str(TEST_APPS / "echo_service.py")]


def env_for(bus: Bus, home: Path) -> dict[str, str]:
    return {"HOME": str(home), "DBUS_SESSION_BUS_ADDRESS": bus.address, "AAI_PLATFORM": "linux"}


def gateway(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def generate_and_install(env: dict[str, str], tmp_path: Path, bus_name: str, *args: str) -> str:
    """`--generate` into a file, `validate` it, install it as HOME/.aai/<appId>/aai.json; returns the appId."""
    out = tmp_path / "generated" / f"{bus_name}{'-'.join(args)}.json"
    generated = gateway(env, "--generate", bus_name, "--out", str(out), *args)
    assert generated.returncode == 0, generated.stderr
    assert generated.stdout == ""
    validated = gateway(env, "validate", str(out))
    assert validated.returncode == 0, validated.stdout
    assert validated.stdout.startswith(f"ok  {out}: ")
    doc = json.loads(out.read_text())
    app_id: str = doc["appId"] if "appId" in doc else doc["app"]["id"]
    assert f"wrote {out}: {app_id}, " in generated.stderr
    target = Path(env["HOME"]) / ".aai" / app_id / "aai.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(out.read_text())
    return app_id


async def run(session: ClientSession, app: str, tool: str, args: dict[str, Any] | None = None) -> str:
    return text_of(await session.call_tool("aai_exec", {"app": app, "tool": tool, "args": args or {}}))


async def eventually(session: ClientSession, app: str, tool: str, expected: str, timeout: float = 10) -> None:
    """Poll a getter through the gateway until it answers `expected`, backing off between tries."""
    delay = 0.01
    seen = None
    with anyio.fail_after(timeout):
        while (seen := await run(session, app, tool)) != expected:
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.2)
    assert seen == expected


@pytest.fixture
def activation_bus(tmp_path: Path) -> Iterator[tuple[Bus, Path]]:
    """A private bus with a service directory: dev.aai.Dormant (would touch a marker file if ever started)
    and dev.aai.Activated (the echo app under that name, started on demand)."""
    services = tmp_path / "services"
    services.mkdir()
    marker = tmp_path / "dormant-started"
    (services / "dev.aai.Dormant.service").write_text(
        f"[D-BUS Service]\nName=dev.aai.Dormant\nExec=/usr/bin/touch {marker}\n"
    )
    workdir = tmp_path / "abus"
    (services / "dev.aai.Activated.service").write_text(
        "[D-BUS Service]\nName=dev.aai.Activated\n"
        f"Exec=/usr/bin/env DBUS_SESSION_BUS_ADDRESS=unix:path={workdir / 'bus'} {' '.join(ECHO)} "
        "--name dev.aai.Activated\n"
    )
    session = Bus(workdir, [services], fixed_socket=True)
    try:
        yield session, marker
    finally:
        pid = session.owner_pid("dev.aai.Activated")
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
        session.stop()


def test_discover_lists_running_and_activatable_services(activation_bus: tuple[Bus, Path], tmp_path: Path) -> None:
    bus, marker = activation_bus
    home = tmp_path / "home"
    with running(start_app(ECHO, bus.env())):
        listed = gateway(env_for(bus, home), "--discover")
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert lines[0] == "DBus session bus: 3 services (1 running, 2 activatable)"
        assert "dev.aai.Echo  running" in lines
        assert "  dev.aai.Echo  /dev/aai/Echo" in lines
        assert "  com.aai.Executor  /dev/aai/Echo" in lines
        assert "dev.aai.Dormant  activatable, not running" in lines
        assert "dev.aai.Activated  activatable, not running" in lines
        assert not any(line.startswith((":", "org.freedesktop.DBus")) for line in lines)
        assert "org.freedesktop.DBus.Properties" not in listed.stdout

        install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
        listed = gateway(env_for(bus, home), "--discover")
        assert "dev.aai.Echo  running  [described by dev.aai.echo]" in listed.stdout.splitlines()

        as_json = gateway(env_for(bus, home), "--discover", "--json")
        assert as_json.returncode == 0, as_json.stderr
        services = {s["name"]: s for s in json.loads(as_json.stdout)}
        assert list(services) == ["dev.aai.Activated", "dev.aai.Dormant", "dev.aai.Echo"]
        assert services["dev.aai.Echo"] == {
            "name": "dev.aai.Echo",
            "running": True,
            "activatable": False,
            "describedBy": ["dev.aai.echo"],
            "interfaces": [
                {"name": "com.aai.Executor", "objects": ["/dev/aai/Echo"]},
                {"name": "dev.aai.Echo", "objects": ["/dev/aai/Echo"]},
            ],
            "truncated": False,
            "error": None,
            "library": [],
        }
        assert services["dev.aai.Dormant"]["running"] is False
        assert services["dev.aai.Dormant"]["activatable"] is True
        assert services["dev.aai.Dormant"]["interfaces"] == []
    assert not marker.exists()
    assert not bus.has_owner("dev.aai.Dormant")
    assert not bus.has_owner("dev.aai.Activated")


def test_generate_of_a_bus_name_is_for_linux_only(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    result = gateway(env, "--platform", "macos", "--generate", "dev.aai.Echo")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "works with DBus on Linux only, and this platform is macos" in result.stderr
    assert "sdef" in result.stderr


def test_generate_refuses_unknown_names_and_bad_options(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    env = env_for(bus, tmp_path / "home")
    missing = gateway(env, "--generate", "dev.aai.Nobody")
    assert missing.returncode == 1
    assert "dev.aai.Nobody is not on the DBus session bus and no service file can start it" in missing.stderr
    bad = gateway(env, "--generate", "not a bus name")
    assert bad.returncode == 1
    assert "'not a bus name' is not a well-known DBus bus name" in bad.stderr
    bad_id = gateway(env, "--generate", "dev.aai.Echo", "--app-id", "Echo")
    assert bad_id.returncode == 1
    assert "app id 'Echo' is not a lowercase reverse-DNS id" in bad_id.stderr
    both = gateway(env, "--scan", "--generate", "dev.aai.Echo")
    assert both.returncode == 2
    assert "--generate cannot be combined with --scan" in both.stderr
    printed = gateway(env, "--generate", "dev.aai.Echo", "--format", "c", "--app-id", "dev.aai.echo-c")
    assert printed.returncode == 0, printed.stderr
    doc = json.loads(printed.stdout)
    assert doc["app"]["id"] == "dev.aai.echo-c"
    assert doc["execution"]["type"] == "dbus"
    assert printed.stderr.splitlines() == [
        "descriptions: 0 from the library, 0 from the interface, 14 mechanical",
        "generated: dev.aai.echo-c, 14 tools from dev.aai.Echo",
    ]


async def test_generated_echo_descriptors_drive_the_app(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    env = env_for(bus, tmp_path / "home")
    app = generate_and_install(env, tmp_path, "dev.aai.Echo")
    assert app == "dev.aai.echo"
    camel = generate_and_install(env, tmp_path, "dev.aai.Echo", "--format", "c", "--app-id", "dev.aai.echo-c")
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        names = [t.name for t in (await session.list_tools()).tools]
        assert {"app_dev_aai_echo", "app_dev_aai_echo-c"} <= set(names)
        guide = text_of(await session.call_tool("app_dev_aai_echo", {}))
        assert "### set_volume" in guide
        for each in (app, camel):
            assert await run(session, each, "echo", {"text": "héllo 🎉"}) == "héllo 🎉"
            assert await run(session, each, "add", {"a": 40, "b": 2}) == "42"
            assert await run(session, each, "get_label") == "echo"
        assert json.loads(await run(session, app, "get_volume")) == 0.5
        await run(session, app, "set_volume", {"volume": 0.25})
        assert json.loads(await run(session, camel, "get_volume")) == 0.25
        joined = await run(session, app, "join", {"parts": ["x", "y"], "sep": "+"})
        assert joined == "x+y"
        described = await run(
            session, camel, "describe", {"name": "n", "count": 3, "ratio": 0.5, "flag": True, "tags": ["t"]}
        )
        assert json.loads(described) == {"name": "n", "count": 3, "ratio": 0.5, "flag": True, "tags": ["t"]}


async def test_generate_starts_an_activatable_service_and_stops_it_again(
    activation_bus: tuple[Bus, Path], tmp_path: Path
) -> None:
    bus, _ = activation_bus
    env = env_for(bus, tmp_path / "home")
    out = tmp_path / "activated.json"
    generated = gateway(env, "--generate", "dev.aai.Activated", "--out", str(out))
    assert generated.returncode == 0, generated.stderr
    started = [line for line in generated.stderr.splitlines() if "was started to read its interface" in line]
    assert len(started) == 1, generated.stderr
    assert started[0].startswith("note: dev.aai.Activated was started to read its interface and has been stopped again")
    assert not bus.has_owner("dev.aai.Activated")
    assert json.loads(out.read_text())["platforms"]["linux"]["service"] == "dev.aai.Activated"

    app = generate_and_install(env, tmp_path, "dev.aai.Activated")
    assert app == "dev.aai.activated"
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        assert await run(session, app, "echo", {"text": "woken"}) == "woken"  # the gateway starts it to call it
    assert bus.has_owner("dev.aai.Activated")


async def test_generate_leaves_a_service_that_was_running_alone(
    activation_bus: tuple[Bus, Path], tmp_path: Path
) -> None:
    bus, _ = activation_bus
    env = env_for(bus, tmp_path / "home")
    with running(start_app([*ECHO, "--name", "dev.aai.Activated"], bus.env())) as echo:
        generated = gateway(env, "--generate", "dev.aai.Activated")
        assert generated.returncode == 0, generated.stderr
        assert "was started to read its interface" not in generated.stderr
        assert bus.owner_pid("dev.aai.Activated") == echo.pid


async def test_generated_mpv_descriptor_drives_mpv(bus: Bus, mpv: Mpv, tmp_path: Path) -> None:
    env = env_for(bus, tmp_path / "home")
    app = generate_and_install(env, tmp_path, "org.mpris.MediaPlayer2.mpv")
    assert app == "org.mpris.mediaplayer2.mpv"
    doc = json.loads((tmp_path / "home" / ".aai" / app / "aai.json").read_text())
    linux = doc["platforms"]["linux"]
    assert (linux["object"], linux["interface"]) == ("/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player")
    tools = {t["name"]: t for t in linux["tools"]}
    # The library's MPRIS entry names the tools it knows (`identity`, not the mechanical `get_identity`).
    assert {"identity", "playback_status", "volume"} <= set(tools)
    assert tools["quit"]["interface"] == "org.mpris.MediaPlayer2"
    assert tools["seek"]["parameters"]["properties"]["offset"]["type"] == "integer"
    assert tools["set_position"]["parameters"]["required"] == ["track_id", "offset"]
    track = silent_wav(tmp_path / "silence.wav")
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        assert await run(session, app, "identity") == "mpv"
        await run(session, app, "open_uri", {"uri": track.as_uri()})
        wait_until(lambda: mpv.property("path") == str(track), 10, "mpv to load the track")
        wait_until(lambda: mpv.property("time-pos") is not None, 10, "mpv to start the track")
        # mpv-mpris updates PlaybackStatus when `pause` changes, not when a file starts.
        await run(session, app, "pause")
        await eventually(session, app, "playback_status", "Paused")
        assert mpv.property("pause") is True
        await run(session, app, "play")
        await eventually(session, app, "playback_status", "Playing")
        await run(session, app, "set_volume", {"volume": 0.5})
        wait_until(lambda: mpv.property("volume") == 50, 5, "mpv to take the volume")
        assert json.loads(await run(session, app, "volume")) == 0.5


async def test_walk_is_bounded_by_depth_and_nodes(bus: Bus, echo_app: None) -> None:
    connection = await MessageBus(bus_address=bus.address).connect()
    try:
        full = await walk(connection, "dev.aai.Echo")
        assert list(full.objects) == ["/", "/dev", "/dev/aai", "/dev/aai/Echo"]
        assert (full.truncated, full.error) == (False, None)
        assert list(full.interfaces()) == ["com.aai.Executor", "dev.aai.Echo"]
        shallow = await walk(connection, "dev.aai.Echo", max_depth=1)
        assert list(shallow.objects) == ["/", "/dev"]
        assert shallow.truncated
        few = await walk(connection, "dev.aai.Echo", max_nodes=3)
        assert list(few.objects) == ["/", "/dev", "/dev/aai"]
        assert few.truncated
    finally:
        connection.disconnect()

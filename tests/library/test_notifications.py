"""The library entry org.freedesktop.notifications, run against dunst under Xvfb on a private bus.

Every tool is called through the installed `aai-gateway --mcp` with the SDK client; what dunst did is
checked with its own `dunstctl` on the same bus. `--generate` of that bus name is checked too: the
library's curated tools replace the mechanical ones.
"""

from __future__ import annotations

import json
import struct
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from aai_gateway.authoring.knowledge import bundled_folder
from tests.e2e.mcp_client import stdio_session, text_of
from tests.e2e.test_dunst import DUNSTRC, MICROSECONDS, NOTIFICATIONS, count, dunstctl, free_display, history
from tests.library.waiting import waiting
from tests.support import Bus, gateway_command, install_descriptor, stop, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "org.freedesktop.notifications"
ENTRY = bundled_folder() / APP


@pytest.fixture(scope="module")
def display(workdir: Path) -> Iterator[str]:
    with free_display(workdir) as number:
        yield number


@pytest.fixture(scope="module")
def dunst(library_bus: Bus, display: str, workdir: Path) -> Iterator[Bus]:
    """dunst once for the module, on the private bus and display, with the test's dunstrc only."""
    config = workdir / "dunstrc"
    config.write_text(DUNSTRC)
    log = workdir / "dunst.log"
    env = library_bus.env(DISPLAY=display)
    env.pop("WAYLAND_DISPLAY", None)
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["dunst", "-config", str(config)], env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    try:

        def serving() -> bool:
            assert proc.poll() is None, f"dunst exited with {proc.returncode}: {log.read_text()}"
            return library_bus.has_owner(NOTIFICATIONS)

        wait_until(serving, 30, f"dunst to own {NOTIFICATIONS}")
        yield library_bus
    finally:
        stop(proc)


def png(path: Path) -> Path:
    """A 2x2 red PNG: an icon dunst can load without any icon theme installed."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    pixels = zlib.compress(b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2)))
    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b""))
    return path


def home_with_entry(bus: Bus, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", ENTRY / "aai.json")
    return {"HOME": str(home), "DBUS_SESSION_BUS_ADDRESS": bus.address, "AAI_PLATFORM": "linux"}


async def run(session: ClientSession, tool: str, args: dict[str, Any] | None = None) -> Any:
    result = await session.call_tool("aai_exec", {"app": APP, "tool": tool, "args": args or {}})
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


def test_entry_names_its_test_and_the_app() -> None:
    entry = json.loads((ENTRY / "entry.json").read_text())
    assert entry["verified"]["level"] == "run"
    assert entry["verified"]["test"] == "tests/library/test_notifications.py"
    assert NOTIFICATIONS in entry["presence"]["busNames"]
    assert "dunst" in entry["presence"]["commands"]


async def test_every_tool_reaches_dunst(dunst: Bus, tmp_path: Path) -> None:
    bus = dunst
    async with stdio_session(home_with_entry(bus, tmp_path), tmp_path / "stderr.log") as session:
        guide = text_of(await session.call_tool("app_org_freedesktop_notifications", {}))
        for tool in ("notify", "close_notification", "get_capabilities", "get_server_information"):
            assert f"### {tool}\n" in guide

        name, vendor, version, spec = await run(session, "get_server_information")
        assert (name, spec) == ("dunst", "1.2")
        assert vendor
        assert version[0].isdigit()
        capabilities = await run(session, "get_capabilities")
        assert {"actions", "body"} <= set(capabilities)

        shown_before = count(bus, "displayed")
        kept_before = count(bus, "history")
        ident = await run(
            session,
            "notify",
            {
                "summary": "Backup finished",
                "body": "412 files copied.",
                "icon": "dialog-information",
                "actions": ["default", "Open", "later", "Remind me later"],
                "hints": {"urgency": 0, "category": "transfer.complete"},
                "timeout": 900_000,
            },
        )
        assert isinstance(ident, int)
        assert ident > 0
        wait_until(lambda: count(bus, "displayed") == shown_before + 1, 10, "dunst to show the notification")

        same = await run(session, "notify", {"summary": "Backup verified", "replaces_id": ident})
        assert same == ident
        assert count(bus, "displayed") == shown_before + 1

        assert await run(session, "close_notification", {"id": ident}) is None
        wait_until(lambda: count(bus, "history") == kept_before + 1, 10, "dunst to move it to its history")
        latest = history(bus)[0]
        assert latest["id"] == ident
        assert (latest["summary"], latest["appname"]) == ("Backup verified", "aai-gateway")
        assert latest["timeout"] == 302 * MICROSECONDS  # the replacement asked nothing: dunst's normal urgency

        icon = png(tmp_path / "disk.png")
        critical = await run(
            session,
            "notify",
            {"summary": "Disk almost full", "body": "3 % left", "icon": str(icon), "hints": {"urgency": 2}},
        )
        wait_until(lambda: count(bus, "displayed") == shown_before + 1, 10, "dunst to show the critical one")
        await run(session, "close_notification", {"id": critical})
        wait_until(lambda: count(bus, "history") == kept_before + 2, 10, "dunst to move it to its history")
        closed = history(bus)[0]
        assert (closed["id"], closed["body"]) == (critical, "3 % left")
        assert closed["icon_path"] == str(icon)
        assert closed["timeout"] == 303 * MICROSECONDS  # urgency 2 reached dunst as critical


async def test_timeout_and_actions_reach_dunst(dunst: Bus, tmp_path: Path) -> None:
    bus = dunst
    kept_before = count(bus, "history")
    async with stdio_session(home_with_entry(bus, tmp_path), tmp_path / "stderr.log") as session:
        ident = await run(session, "notify", {"summary": "Tea", "actions": ["default", "Done"], "timeout": 600_000})
        await run(session, "close_notification", {"id": ident})
        wait_until(lambda: count(bus, "history") == kept_before + 1, 10, "dunst to move it to its history")
        entry = history(bus)[0]
        assert (entry["id"], entry["summary"], entry["timeout"]) == (ident, "Tea", 600 * MICROSECONDS)
        assert entry["default_action_name"] == "default"


async def test_waits_for_dunst_to_close_a_notification_or_run_its_action(dunst: Bus, tmp_path: Path) -> None:
    """aai_wait for notification_closed, pending while `dunstctl close` closes the gateway's notification, gets
    its id and the reason (2: dismissed by the user); action_invoked gets the key `dunstctl action` ran."""
    bus = dunst
    async with stdio_session(home_with_entry(bus, tmp_path), tmp_path / "stderr.log") as session:
        ident = await run(session, "notify", {"summary": "Kettle boiled", "timeout": 600_000})
        wait_until(lambda: count(bus, "displayed") >= 1, 10, "dunst to show the notification")
        mine = f"id == `{ident}`"
        async with waiting(session, app=APP, event="notification_closed", filter=mine, timeout=60) as wait:
            dunstctl(bus, "close")
        answer = await wait.answer()
        assert answer["payload"] == {"id": ident, "reason": 2}

        ident = await run(session, "notify", {"summary": "Tea", "actions": ["default", "Drink"], "timeout": 600_000})
        wait_until(lambda: count(bus, "displayed") >= 1, 10, "dunst to show the notification")
        async with waiting(session, app=APP, event="action_invoked", filter=f"id == `{ident}`", timeout=60) as wait:
            dunstctl(bus, "action", "0")
        assert (await wait.answer())["payload"] == {"id": ident, "action": "default"}
        await run(session, "close_notification", {"id": ident})


def test_generate_takes_the_library_knowledge(dunst: Bus, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "DBUS_SESSION_BUS_ADDRESS": dunst.address, "AAI_PLATFORM": "linux"}
    out = tmp_path / "generated.json"
    done = subprocess.run(
        [gateway_command(), "--generate", NOTIFICATIONS, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    linux = doc["platforms"]["linux"]
    tools = {t["name"]: t for t in linux["tools"]}
    curated = json.loads((ENTRY / "aai.json").read_text())
    for want in curated["tools"]:
        got = tools[want["name"]]
        assert got["description"] == want["description"]
        assert got["annotations"] == want["annotations"]
        assert list(got["parameters"]["properties"]) == list(want["parameters"]["properties"])
        assert got["method"] == want["execution"]["method"]
    assert "interface" not in tools["notify"]  # the binding stays the generated one: the main interface
    assert linux["interface"] == NOTIFICATIONS
    # dunst's own interface has its library entry too: it describes more of this service's tools, so it names
    # the app, and each of its tools (by method) gets its curated text as well
    own = json.loads((bundled_folder() / "org.dunstproject.dunst" / "aai.json").read_text())
    assert doc["name"].split("|")[0] == own["app"]["name"]["en"]
    by_method = {t["method"]: t for t in tools.values() if "method" in t}
    described = [t for t in own["tools"] if t["execution"].get("method") in by_method]
    for want in described:
        assert by_method[want["execution"]["method"]]["description"] == want["description"]
    assert by_method["NotificationAction"]["description"] != by_method["NotificationCloseAll"]["description"]
    assert f"descriptions: {4 + len(own['tools'])} from the library" in done.stderr, done.stderr

"""A real third-party app end to end: dunst under Xvfb, on a private bus, through org.freedesktop.Notifications.

The installed `aai-gateway --mcp` is driven with the MCP SDK client; what dunst did is checked with
its own `dunstctl`, on the same bus.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.support import TEST_APPS, Bus, install_descriptor, stop, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "org.dunst-project.dunst"
NOTIFICATIONS = "org.freedesktop.Notifications"
X11_SOCKETS = Path("/tmp/.X11-unix")
DISPLAYS = range(90, 190)

# Only what the test relies on, so that no user or system dunstrc is read. Each urgency gets its own
# timeout (seconds, longer than any test), which dunst keeps in its history: that tells the urgency
# a notification was shown with.
DUNSTRC = """\
[global]
    monitor = 0
    follow = none
    notification_limit = 0
    idle_threshold = 0
    history_length = 50

[urgency_low]
    timeout = 301

[urgency_normal]
    timeout = 302

[urgency_critical]
    timeout = 303
"""
MICROSECONDS = 1_000_000


def lock_pid(number: int) -> int | None:
    """The process id in the X server lock file of display `number` (the server writes it first)."""
    try:
        return int(Path(f"/tmp/.X{number}-lock").read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def start_xvfb(number: int, log: Path) -> subprocess.Popen[bytes] | None:
    """`Xvfb :number`, once its socket is there; None when another server took that display first."""
    socket = X11_SOCKETS / f"X{number}"
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["Xvfb", f":{number}", "-nolisten", "tcp", "-screen", "0", "1280x800x24"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until(
            lambda: proc.poll() is not None or (lock_pid(number) == proc.pid and socket.exists()),
            30,
            f"Xvfb :{number} to listen",
        )
    except TimeoutError:
        stop(proc)
        raise
    if proc.poll() is not None:
        stop(proc)
        return None
    return proc


@contextmanager
def free_display(workdir: Path) -> Iterator[str]:
    """A private X display (`:N`) on the first display number nobody uses; Xvfb's log goes to `workdir`."""
    for number in DISPLAYS:
        if (X11_SOCKETS / f"X{number}").exists() or Path(f"/tmp/.X{number}-lock").exists():
            continue
        proc = start_xvfb(number, workdir / f"xvfb-{number}.log")
        if proc is None:
            continue
        try:
            yield f":{number}"
        finally:
            stop(proc)
        return
    pytest.fail(f"no free X display in :{DISPLAYS.start}..:{DISPLAYS.stop - 1}")


@pytest.fixture
def display(tmp_path: Path) -> Iterator[str]:
    with free_display(tmp_path) as number:
        yield number


@pytest.fixture
def dunst(bus: Bus, display: str, tmp_path: Path) -> Iterator[None]:
    """dunst on the private bus, drawing on the private display, with the config above only."""
    config = tmp_path / "dunstrc"
    config.write_text(DUNSTRC)
    log = tmp_path / "dunst.log"
    env = bus.env(DISPLAY=display)
    env.pop("WAYLAND_DISPLAY", None)  # dunst prefers Wayland when it sees one
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["dunst", "-config", str(config)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:

        def serving() -> bool:
            assert proc.poll() is None, f"dunst exited with {proc.returncode}: {log.read_text()}"
            return bus.has_owner(NOTIFICATIONS)

        wait_until(serving, 30, f"dunst to own {NOTIFICATIONS}")
        yield
    finally:
        stop(proc)


def dunstctl(bus: Bus, *args: str) -> str:
    done = subprocess.run(["dunstctl", *args], env=bus.env(), capture_output=True, text=True, check=True, timeout=10)
    return done.stdout


def count(bus: Bus, which: str) -> int:
    return int(dunstctl(bus, "count", which))


def history(bus: Bus) -> list[dict[str, Any]]:
    """`dunstctl history` (newest first), each entry's variants unwrapped."""
    listed = json.loads(dunstctl(bus, "history"))
    assert listed["type"] == "aa{sv}"
    return [{key: field["data"] for key, field in entry.items()} for entry in listed["data"][0]]


def gateway_env(bus: Bus, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / APP / "aai.json")
    return {"HOME": str(home), "DBUS_SESSION_BUS_ADDRESS": bus.address, "AAI_PLATFORM": "linux"}


async def run(session: ClientSession, tool: str, args: dict[str, Any] | None = None) -> Any:
    result = await session.call_tool("aai_exec", {"app": APP, "tool": tool, "args": args or {}})
    return json.loads(text_of(result))


async def test_dunst_shows_replaces_and_closes_notifications(bus: Bus, dunst: None, tmp_path: Path) -> None:
    async with stdio_session(gateway_env(bus, tmp_path), tmp_path / "stderr.log") as session:
        names = [t.name for t in (await session.list_tools()).tools]
        assert "app_org_dunst-project_dunst" in names
        guide = text_of(await session.call_tool(f"app:{APP}", {}))
        assert guide.startswith("# Notifications Operation Guide\n")
        for tool in ("notify", "close", "server_information", "capabilities"):
            assert f"### {tool}\n" in guide

        name, vendor, version, spec = await run(session, "server_information")
        assert (name, spec) == ("dunst", "1.2")
        assert vendor
        assert version[0].isdigit()
        capabilities = await run(session, "capabilities")
        assert {"actions", "body"} <= set(capabilities)
        assert count(bus, "displayed") == count(bus, "history") == 0

        first = await run(
            session,
            "notify",
            {
                "summary": "Mail from Ada",
                "body": "Lunch at noon?\nReply before 11.",
                "actions": ["default", "Open"],
                "hints": {"urgency": 2, "category": "email"},
            },
        )
        assert isinstance(first, int)
        assert first > 0
        wait_until(lambda: count(bus, "displayed") == 1, 10, "dunst to show the notification")

        second = await run(session, "notify", {"summary": "Build finished"})
        assert isinstance(second, int)
        assert second not in {0, first}
        wait_until(lambda: count(bus, "displayed") == 2, 10, "dunst to show the second notification")
        replaced = await run(
            session, "notify", {"summary": "Build failed", "body": "3 tests failed", "replaces_id": second}
        )
        assert replaced == second
        assert count(bus, "displayed") == 2
        assert count(bus, "history") == 0

        assert await run(session, "close", {"id": first}) is None
        wait_until(lambda: count(bus, "history") == 1, 10, "dunst to move the closed notification to history")
        assert count(bus, "displayed") == 1
        [closed] = history(bus)
        assert closed["id"] == first
        assert closed["summary"] == "Mail from Ada"
        assert closed["body"] == "Lunch at noon?\nReply before 11."
        assert closed["appname"] == "aai-gateway"
        assert closed["category"] == "email"
        assert closed["default_action_name"] == "default"

        assert await run(session, "close", {"id": second}) is None
        wait_until(lambda: count(bus, "displayed") == 0, 10, "dunst to take the last notification down")
        assert count(bus, "history") == 2
        latest = history(bus)[0]
        assert (latest["id"], latest["summary"], latest["body"]) == (second, "Build failed", "3 tests failed")
        assert latest["category"] == ""
        assert latest["timeout"] == 302 * MICROSECONDS  # expire_timeout -1: dunst's own, for normal urgency


async def test_explicit_timeout_and_bad_arguments(bus: Bus, dunst: None, tmp_path: Path) -> None:
    async with stdio_session(gateway_env(bus, tmp_path), tmp_path / "stderr.log") as session:

        async def exec_error(tool: str, args: dict[str, Any]) -> tuple[int, str, str]:
            error = await error_of(session, "aai_exec", {"app": APP, "tool": tool, "args": args})
            assert isinstance(error.data, dict)
            return error.code, error.data["type"], error.data["detail"]

        code, kind, detail = await exec_error("close", {"id": "seven"})
        assert (code, kind) == (-32005, "INVALID_PARAMS")
        assert detail.startswith("args.id: ")
        assert "integer" in detail
        code, kind, detail = await exec_error("close", {"id": -1})
        assert (code, kind) == (-32005, "INVALID_PARAMS")
        assert detail.startswith("args.id: ")
        code, kind, detail = await exec_error("notify", {"summary": "x", "hints": {"urgency": 5}})
        assert (code, kind) == (-32005, "INVALID_PARAMS")
        assert detail.startswith("args.hints.urgency: ")
        code, kind, detail = await exec_error("notify", {"body": "no summary"})
        assert (code, kind, detail) == (-32005, "INVALID_PARAMS", "args: missing required field 'summary'")
        assert count(bus, "displayed") == count(bus, "history") == 0

        ident = await run(session, "notify", {"summary": "Kettle", "expire_timeout": 600_000})
        wait_until(lambda: count(bus, "displayed") == 1, 10, "dunst to show the notification")
        assert await run(session, "close", {"id": ident}) is None
        wait_until(lambda: count(bus, "history") == 1, 10, "dunst to move the notification to history")
        [entry] = history(bus)
        assert (entry["id"], entry["summary"], entry["timeout"]) == (ident, "Kettle", 600 * MICROSECONDS)


async def test_urgency_hint_reaches_dunst(bus: Bus, dunst: None, tmp_path: Path) -> None:
    async with stdio_session(gateway_env(bus, tmp_path), tmp_path / "stderr.log") as session:
        ident = await run(session, "notify", {"summary": "Disk full", "hints": {"urgency": 2}})
        wait_until(lambda: count(bus, "displayed") == 1, 10, "dunst to show the notification")
        await run(session, "close", {"id": ident})
        wait_until(lambda: count(bus, "history") == 1, 10, "dunst to move the notification to history")
        [entry] = history(bus)
        assert entry["timeout"] == 303 * MICROSECONDS  # dunst's timeout for critical urgency

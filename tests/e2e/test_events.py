"""aai_wait on a DBus signal of the suite's own: a storm of signals, an outsized one, a hostile filter, a
cancelled wait. The signals come from a dbus-fast connection of the test owning dev.aai.Storm on the private
bus; the gateway is the installed `aai-gateway --mcp`, driven by the MCP SDK client."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from dbus_fast import Message, NameFlag, RequestNameReply
from dbus_fast.aio import MessageBus
from mcp import ClientSession

from aai_gateway.executors.dbus import patient
from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.library.waiting import waiting
from tests.support import TEST_APPS, Bus, gateway_command, install_descriptor, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "dev.aai.storm"
NAME = "dev.aai.Storm"
PATH = "/dev/aai/Storm"
STORM = {
    "schema_version": "1.0",
    "appId": APP,
    "name": "Storm",
    "description": "A DBus service of the test that sends signals",
    "version": "1.0.0",
    "platforms": {
        "linux": {
            "automation": "dbus",
            "service": NAME,
            "object": PATH,
            "interface": NAME,
            "tools": [
                {
                    "name": "ping",
                    "description": "Is it there",
                    "parameters": {"type": "object", "properties": {}},
                    "interface": "org.freedesktop.DBus.Peer",
                    "method": "Ping",
                    "annotations": {"readOnlyHint": True},
                }
            ],
        }
    },
    "events": [
        {
            "name": "tick",
            "description": "One tick: its number and text",
            "dbus": {"interface": NAME, "member": "Tick", "fields": ["n", "text"]},
        }
    ],
}


@pytest.fixture
async def emitter(bus: Bus) -> AsyncIterator[MessageBus]:
    """A connection owning dev.aai.Storm on the private bus, to send Tick signals from."""
    connection = await MessageBus(bus_address=bus.address).connect()
    patient(connection)  # a full socket buffer is no lost connection (see executors/dbus.py)
    reply = await connection.request_name(NAME, NameFlag.DO_NOT_QUEUE)
    assert reply == RequestNameReply.PRIMARY_OWNER
    try:
        yield connection
    finally:
        connection.disconnect()


def home_with_storm(bus: Bus, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".aai" / APP).mkdir(parents=True)
    (home / ".aai" / APP / "aai.json").write_text(json.dumps(STORM))
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    return {"HOME": str(home), "DBUS_SESSION_BUS_ADDRESS": bus.address, "AAI_PLATFORM": "linux"}


async def tick(emitter: MessageBus, n: int, text: str = "") -> None:
    await emitter.send(Message.new_signal(PATH, NAME, "Tick", "us", [n, text]))


def gateway_rss(home: str) -> int:
    """Resident kilobytes of the gateway whose HOME is `home` (found by its environment)."""
    for proc in Path("/proc").iterdir():
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            status = (proc / "status").read_text()
            command = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if f"HOME={home}".encode() in environ and b"aai-gateway" in command:
            return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
    raise AssertionError("the gateway process was not found")


async def echo(session: ClientSession, text: str) -> str:
    result = await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": text}})
    assert not result.is_error, text_of(result)
    return text_of(result)


@pytest.mark.hostile("limits")
async def test_a_storm_of_signals_keeps_memory_bounded_and_the_gateway_answering(
    bus: Bus, echo_app: None, emitter: MessageBus, tmp_path: Path
) -> None:
    env = home_with_storm(bus, tmp_path)
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        assert await echo(session, "before") == "before"
        async with (
            waiting(session, app=APP, event="tick", filter="n == `9999`", timeout=120) as last,
            waiting(session, app=APP, event="tick", timeout=120) as first,
        ):
            before = gateway_rss(env["HOME"])
            for n in range(10_000):
                await tick(emitter, n, "x" * 200)
        answer = await first.answer()
        assert answer["payload"]["text"] == "x" * 200
        assert (await last.answer())["payload"] == {"n": 9999, "text": "x" * 200}  # every signal was read
        grown = gateway_rss(env["HOME"]) - before
        print(f"10,000 signals: the gateway grew {grown} kB; the first wait saw {answer.get('dropped', 0)} dropped")
        assert grown < 64 * 1024, f"the gateway grew by {grown} kB during the storm"
        assert await echo(session, "after") == "after"
        stderr = (tmp_path / "stderr.log").read_text()
        wait_until(lambda: "stopped listening for tick" in (tmp_path / "stderr.log").read_text(), 10, "unsubscribe")
        assert "listening for tick on the session bus" in stderr


@pytest.mark.hostile("limits")
async def test_a_ten_megabyte_signal_comes_as_a_note(
    bus: Bus, echo_app: None, emitter: MessageBus, tmp_path: Path
) -> None:
    async with stdio_session(home_with_storm(bus, tmp_path), tmp_path / "stderr.log") as session:
        async with waiting(session, app=APP, event="tick", timeout=60) as wait:
            await tick(emitter, 1, "y" * 10_000_000)
        payload = (await wait.answer())["payload"]
        assert payload["truncated"] is True
        assert "more than 262144 bytes" in payload["note"]
        async with waiting(session, app=APP, event="tick", timeout=60) as wait:
            await tick(emitter, 2, "small")
        assert (await wait.answer())["payload"] == {"n": 2, "text": "small"}


@pytest.mark.hostile("validation")
@pytest.mark.parametrize(
    ("filter", "said"),
    [
        ("system('id')", "calls system, which JMESPath does not have"),
        ("n == `1` || __import__('os')", "calls __import__, which JMESPath does not have"),
        ("n ==", "is not a JMESPath query"),
        ("a" * 5000, "a ${…} query may hold 1000 characters"),
    ],
)
async def test_a_filter_that_tries_to_escape_is_refused(
    bus: Bus, emitter: MessageBus, tmp_path: Path, filter: str, said: str
) -> None:
    async with stdio_session(home_with_storm(bus, tmp_path), tmp_path / "stderr.log") as session:
        error = await error_of(session, "aai_wait", {"app": APP, "event": "tick", "filter": filter, "timeout": 5})
        assert isinstance(error.data, dict)
        assert error.data["type"] == "INVALID_PARAMS"
        assert said in error.data["detail"]


async def test_a_cancelled_wait_ends_and_the_gateway_serves_on(
    bus: Bus, echo_app: None, emitter: MessageBus, tmp_path: Path
) -> None:
    log = tmp_path / "stderr.log"
    async with stdio_session(home_with_storm(bus, tmp_path), log) as session:
        listening = anyio.Event()

        async def progressed(progress: float, total: float | None, message: str | None) -> None:
            listening.set()

        async with anyio.create_task_group() as group:

            async def wait() -> None:
                await session.call_tool(
                    "aai_wait", {"app": APP, "event": "tick", "timeout": 600}, progress_callback=progressed
                )

            group.start_soon(wait)
            with anyio.fail_after(30):
                await listening.wait()
            group.cancel_scope.cancel()
        wait_until(lambda: "stopped listening for tick" in log.read_text(), 15, "the cancelled wait to unsubscribe")
        assert await echo(session, "still here") == "still here"
        async with waiting(session, app=APP, event="tick", timeout=60) as again:
            await tick(emitter, 5, "again")
        assert (await again.answer())["payload"] == {"n": 5, "text": "again"}


async def test_unknown_event_and_bad_timeout_say_what_is_wrong(bus: Bus, emitter: MessageBus, tmp_path: Path) -> None:
    async with stdio_session(home_with_storm(bus, tmp_path), tmp_path / "stderr.log") as session:
        guide = text_of(await session.call_tool("app_dev_aai_storm", {}))
        assert "## Events" in guide
        assert "### tick" in guide
        cases: list[tuple[dict[str, Any], str, str]] = [
            (
                {"event": "tock", "timeout": 5},
                "TOOL_NOT_FOUND",
                "dev.aai.storm has no event 'tock'; its events are: tick",
            ),
            ({"event": "tick", "timeout": 3601}, "INVALID_PARAMS", "at most 3600 seconds"),
            ({"event": "tick", "timeout": 0}, "INVALID_PARAMS", "above 0"),
            ({"event": "tick"}, "INVALID_PARAMS", "'timeout' as a number of seconds"),
        ]
        for (arguments, kind, said), name in zip(cases, ["aai_wait", "aai:wait"] * 2, strict=True):
            error = await error_of(session, name, {"app": APP, **arguments})
            assert isinstance(error.data, dict)
            assert (error.data["type"], said in error.data["detail"]) == (kind, True), error.data


async def test_waiting_asks_consent_as_a_read_of_the_app(bus: Bus, emitter: MessageBus, tmp_path: Path) -> None:
    """A client that cannot be asked gets CONSENT_REQUIRED naming the wait; once the user allows the app's reads,
    the wait runs, and the history records it as the tool '(wait) tick'."""
    env = home_with_storm(bus, tmp_path)
    arguments = {"app": APP, "event": "tick", "timeout": 1}
    async with stdio_session(env, tmp_path / "stderr.log", consent=None) as session:
        error = await error_of(session, "aai_wait", arguments)
        assert isinstance(error.data, dict)
        assert error.data["type"] == "CONSENT_REQUIRED"
        assert "(wait) tick" in error.data["detail"]
    config = {"consent": {"rules": [{"app": APP, "decision": "allow"}]}}
    (Path(env["HOME"]) / ".aai" / "config.json").write_text(json.dumps(config))
    async with stdio_session(env, tmp_path / "stderr.log", consent=None) as session:
        result = await session.call_tool("aai_wait", arguments)
        assert result.structured_content == {"app": APP, "event": "tick", "timedOut": True}
        assert text_of(result) == f"No tick event from {APP} came within the timeout."
    listed = subprocess.run(
        [gateway_command(), "history", "--app", APP, "--json"], env=env, capture_output=True, text=True, check=True
    )
    assert [(r["tool"], r["status"]) for r in json.loads(listed.stdout)] == [
        ("(wait) tick", "ok"),
        ("(wait) tick", "error"),
    ]

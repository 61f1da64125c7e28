"""DBus beyond plain method calls, and DBus faults, through the installed `aai-gateway --mcp`."""

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
from mcp import ClientSession

from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.support import TEST_APPS, Bus, install_descriptor, running, start_app, stop, until_echo_called

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ECHO = TEST_APPS / "dev.aai.echo" / "aai.json"
ENVELOPE = TEST_APPS / "dev.aai.echo-ipc" / "aai.json"


def home_with(tmp_path: Path, *descriptors: Path) -> Path:
    home = tmp_path / "home"
    for source in descriptors:
        install_descriptor(home / ".aai", source)
    return home


async def run(session: ClientSession, app: str, tool: str, args: dict[str, Any] | None = None) -> str:
    return text_of(await session.call_tool("aai_exec", {"app": app, "tool": tool, "args": args or {}}))


async def failure(session: ClientSession, app: str, tool: str, args: dict[str, Any] | None = None) -> tuple[int, str]:
    error = await error_of(session, "aai_exec", {"app": app, "tool": tool, "args": args or {}})
    return error.code, str(error.data["detail"])


async def test_properties_argument_lists_and_the_ipc_envelope(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    env = bus.env(HOME=str(home_with(tmp_path, ECHO, ENVELOPE)), AAI_PLATFORM="linux")
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        assert json.loads(await run(session, "dev.aai.echo", "volume")) == 0.5
        assert await run(session, "dev.aai.echo", "set_volume", {"level": 0.25}) == "null"
        assert json.loads(await run(session, "dev.aai.echo", "volume")) == 0.25
        code, detail = await failure(session, "dev.aai.echo", "set_volume", {"level": 3})
        assert (code, "outside 0..1" in detail) == (-32001, True)
        assert await run(session, "dev.aai.echo", "label") == "echo"
        code, detail = await failure(session, "dev.aai.echo", "set_label", {"text": "x"})
        assert code == -32001
        assert "Label" in detail

        assert await run(session, "dev.aai.echo", "greet", {"name": "Ada"}) == "Hello Ada!"
        assert await run(session, "dev.aai.echo", "greet", {"name": "Ada", "punctuation": "?"}) == "Hello Ada?"

        echoed = json.loads(await run(session, "dev.aai.echo-ipc", "echo", {"text": 'a "quoted" $(id)'}))
        assert echoed["text"] == 'a "quoted" $(id)'
        assert len(echoed["id"]) == 32
        assert (await failure(session, "dev.aai.echo-ipc", "deny"))[0] == -32004
        assert (await failure(session, "dev.aai.echo-ipc", "unknown"))[0] == -32003


@pytest.fixture
def echo_process(bus: Bus) -> Iterator[subprocess.Popen[str]]:
    with running(start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())) as proc:
        yield proc


async def test_app_killed_mid_call_is_not_running_and_the_gateway_goes_on(
    bus: Bus, echo_process: subprocess.Popen[str], tmp_path: Path
) -> None:
    env = bus.env(HOME=str(home_with(tmp_path, ECHO)), AAI_PLATFORM="linux")
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        outcome: list[tuple[int, str]] = []

        async def slow_call() -> None:
            outcome.append(await failure(session, "dev.aai.echo", "slow", {"seconds": 15}))

        async with anyio.create_task_group() as group:
            group.start_soon(slow_call)
            await until_echo_called(bus, 0)  # the app counts the Sleep as soon as it arrives
            echo_process.kill()
        [(code, detail)] = outcome
        assert code == -32009
        assert "left the bus before answering Sleep" in detail
        with running(start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())):
            assert await run(session, "dev.aai.echo", "echo", {"text": "back"}) == "back"


async def test_activatable_service_is_started_and_called(tmp_path: Path) -> None:
    services = tmp_path / "services"
    services.mkdir()
    (services / "dev.aai.Echo.service").write_text(
        f"[D-BUS Service]\nName=dev.aai.Echo\nExec={sys.executable} {TEST_APPS / 'echo_service.py'}\n"
    )
    bus = Bus(tmp_path / "bus", service_dirs=[services])
    try:
        assert not bus.has_owner("dev.aai.Echo")
        env = bus.env(HOME=str(home_with(tmp_path, ECHO)), AAI_PLATFORM="linux")
        async with stdio_session(env, tmp_path / "stderr.log") as session:
            assert await run(session, "dev.aai.echo", "echo", {"text": "woke up"}) == "woke up"
        assert bus.has_owner("dev.aai.Echo")
    finally:
        pid = bus.owner_pid("dev.aai.Echo")
        if pid:
            os.kill(pid, signal.SIGTERM)
        bus.stop()


async def test_bus_restart_is_survived(tmp_path: Path) -> None:
    bus = Bus(tmp_path / "bus", fixed_socket=True)
    app = start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())
    env = bus.env(HOME=str(home_with(tmp_path, ECHO)), AAI_PLATFORM="linux")
    try:
        async with stdio_session(env, tmp_path / "stderr.log") as session:
            assert await run(session, "dev.aai.echo", "echo", {"text": "before"}) == "before"
            stop(app)
            bus.stop()
            bus = Bus(tmp_path / "bus", fixed_socket=True)
            app = start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())
            result = await session.call_tool(
                "aai_exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "after"}}
            )
            if result.is_error:  # the first call may only find out that the old connection is gone
                result = await session.call_tool(
                    "aai_exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "after"}}
                )
            assert text_of(result) == "after"
    finally:
        stop(app)
        bus.stop()


async def test_a_slow_app_does_not_delay_another(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    second = json.loads(ECHO.read_text())
    second["appId"] = "dev.aai.echo-two"
    second["platforms"]["linux"]["service"] = "dev.aai.EchoTwo"
    source = tmp_path / "dev.aai.echo-two" / "aai.json"
    source.parent.mkdir()
    source.write_text(json.dumps(second))
    env = bus.env(HOME=str(home_with(tmp_path, ECHO, source)), AAI_PLATFORM="linux")
    app = [sys.executable, str(TEST_APPS / "echo_service.py"), "--name", "dev.aai.EchoTwo"]
    with running(start_app(app, bus.env())):
        async with stdio_session(env, tmp_path / "stderr.log") as session:
            finished: list[str] = []
            before = bus.echo_calls()

            async def slow() -> None:
                await run(session, "dev.aai.echo", "slow", {"seconds": 1})
                finished.append("slow app")

            async def fast() -> None:
                await until_echo_called(bus, before)  # the slow call is running in its app
                for _ in range(5):
                    await run(session, "dev.aai.echo-two", "echo", {"text": "quick"})
                finished.append("other app")

            async with anyio.create_task_group() as group:
                group.start_soon(slow)
                group.start_soon(fast)
            assert finished == ["other app", "slow app"]

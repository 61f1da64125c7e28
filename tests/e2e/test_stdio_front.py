"""A stdio session is served without the MCP SDK until it asks for something only the SDK serves.

After the handshake (answered before the SDK is imported), calls, guides, pings and listings are
answered straight from the gateway; the first request the front does not serve has the SDK imported,
which then serves the rest of the session while the calls already taken run on. The answers must be
the SDK's own, whichever serves them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.raw_client import RawClient, raw_session, spawn
from tests.support import TEST_APPS, Bus, echo_home, install_descriptor, until, until_echo_called

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CALLER = "front-tests"
HANDED_OVER = "served by the MCP SDK from now on"
SDK_MARKS = ("/cryptography/hazmat/bindings/", "/pydantic_core/")
"""Libraries the MCP SDK loads (for its auth, and its types) and the gateway's front does not: seen in the
process's maps, they tell from outside whether the SDK was imported. The SDK path of each test checks
that it still loads both."""


def sdk_loaded(client: RawClient) -> bool | None:
    """True when the SDK's libraries are loaded, False when none is, None for some but not all."""
    maps = Path(f"/proc/{client.proc.pid}/maps").read_text()
    found = {mark for mark in SDK_MARKS if mark in maps}
    return True if len(found) == len(SDK_MARKS) else False if not found else None


def env_of(bus: Bus, home: Path, **config: Any) -> dict[str, str]:
    echo_home(home, CALLER, logLevel="debug", **config)
    return bus.env(HOME=str(home), AAI_PLATFORM="linux")


def exec_of(tool: str, **args: Any) -> dict[str, Any]:
    return {"name": "aai_exec", "arguments": {"app": "dev.aai.echo", "tool": tool, "args": args}}


async def session_answers(client: RawClient) -> list[dict[str, Any]]:
    """Answers to what the front serves: calls (one refused), a guide, a ping and the listings."""
    found = [
        await client.message("tools/call", exec_of("echo", text="héllo")),
        await client.message("tools/call", exec_of("add", a=2, b=3)),
        await client.message("tools/call", exec_of("echo", text=5)),
        await client.message("tools/call", {"name": "app_dev_aai_echo", "arguments": {}}),
        await client.message("ping", {}),
        await client.message("tools/list", {}),
        await client.message("resources/list", {}),
        await client.message("resources/templates/list", {}),
        await client.message("prompts/list", {}),
    ]
    # The cancelling of a call already answered is dropped, as the SDK drops it.
    client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    found.append(await client.message("tools/call", exec_of("echo", text="after")))
    return found


async def test_a_session_of_calls_is_served_without_the_sdk_and_as_the_sdk_serves_it(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    found: dict[bool, list[dict[str, Any]]] = {}
    for fast in (True, False):
        log = tmp_path / f"stderr-{fast}.log"
        async with raw_session(env_of(bus, tmp_path / f"home-{fast}", fastStdio=fast), log, CALLER) as client:
            found[fast] = await session_answers(client)
            assert sdk_loaded(client) is (not fast)
        assert client.unmatched == []
        if fast:
            assert HANDED_OVER not in log.read_text()
    assert found[True] == found[False]
    assert found[True][0]["result"]["content"][0]["text"] == "héllo"
    assert found[True][2]["result"]["isError"] is True
    assert "echo" in found[True][3]["result"]["content"][0]["text"]
    assert found[True][4]["result"] == {}
    assert [r["name"] for r in found[True][8]["result"]["prompts"]] == []
    assert found[True][6]["result"]["resources"][0]["uri"] == "app:dev.aai.echo"


async def test_the_sdk_takes_over_while_calls_the_front_took_run_on(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    async with raw_session(env_of(bus, tmp_path / "home"), log, CALLER) as client:
        before = bus.echo_calls()
        _, slow = client.start("tools/call", exec_of("slow", seconds=1))
        await until_echo_called(bus, before)
        assert sdk_loaded(client) is False
        read = await client.request("resources/read", {"uri": "app:dev.aai.echo"})  # the front does not serve it
        assert read["contents"][0]["uri"] == "app:dev.aai.echo"
        assert "'resources/read'" in log.read_text()
        assert sdk_loaded(client) is True
        assert not slow.done()
        assert (await slow)["result"]["isError"] is False
        # The calls after are taken off the wire as before, now for the SDK's connection.
        assert (await client.request("tools/call", exec_of("echo", text="next")))["content"][0]["text"] == "next"
        assert (await client.request("ping", {})) == {}
    assert client.unmatched == []


async def test_a_change_of_apps_before_the_sdk_serves_is_told_to_the_client(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    async with raw_session(env_of(bus, home), tmp_path / "stderr.log", CALLER) as client:
        assert (await client.request("tools/call", exec_of("echo", text="x")))["content"][0]["text"] == "x"
        install_descriptor(home / ".aai", TEST_APPS / "dev.aai.tasks" / "aai.json")
        told = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        await until(lambda: told in client.unmatched, 20, "the client told its tools changed")
        listed = await client.request("tools/list", {})
        assert "app_dev_aai_tasks" in [tool["name"] for tool in listed["tools"]]
        assert (await client.request("tools/call", exec_of("echo", text="y")))["content"][0]["text"] == "y"


async def test_the_end_of_stdin_ends_a_session_as_the_sdk_ends_it(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    """Stdin closed while a call runs: the call is cut off and answered "Connection closed", and the gateway
    exits, whichever path took the call."""
    found = {}
    for fast in (True, False):
        log = tmp_path / f"stderr-{fast}.log"
        client = await asyncio.wait_for(_started(env_of(bus, tmp_path / f"home-{fast}", fastStdio=fast), log), 30)
        before = bus.echo_calls()
        _, slow = client.start("tools/call", exec_of("slow", seconds=30))
        await until_echo_called(bus, before)
        await client.aclose()
        assert client.proc.returncode == 0
        found[fast] = slow.result()
        assert HANDED_OVER not in log.read_text()
    assert found[True] == found[False]
    assert found[True]["error"] == {"code": -32000, "message": "Connection closed"}


async def _started(env: dict[str, str], log: Path) -> RawClient:
    client = await spawn(env, log)
    await client.initialize(CALLER)
    return client

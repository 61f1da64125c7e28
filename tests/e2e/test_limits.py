"""Limits through the installed gateway: per-app slots, timeouts, calls before initialize, a client that
stops reading. Each case is one hostile input the gateway must hold against."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.e2e.mcp_client import web_gateway
from tests.e2e.raw_client import RawClient, raw_session, spawn
from tests.napper import Napper, serving
from tests.napper import descriptor as napper_descriptor
from tests.support import TEST_APPS, Bus, gateway_command, install_descriptor, stop

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ECHO = "dev.aai.echo"
NAPPER = "dev.aai.napper"


NAPPER_DESCRIPTOR = napper_descriptor(NAPPER, "dev.aai.Napper", "dev.aai.Napper", "/dev/aai/Napper")


@pytest.fixture
async def napper(bus: Bus) -> AsyncIterator[Napper]:
    async with serving(bus, "dev.aai.Napper", "/dev/aai/Napper", ["dev.aai.Napper"]) as app:
        yield app


def make_env(bus: Bus, tmp_path: Path, **config: Any) -> dict[str, str]:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    folder = home / ".aai" / NAPPER
    folder.mkdir(parents=True)
    (folder / "aai.json").write_text(json.dumps(NAPPER_DESCRIPTOR), "utf-8")
    config.setdefault("consent", {"default": "allow"})
    (home / ".aai" / "config.json").write_text(json.dumps(config), "utf-8")
    return bus.env(HOME=str(home), AAI_PLATFORM="linux")


def exec_args(app: str, tool: str, **args: Any) -> dict[str, Any]:
    return {"name": "aai_exec", "arguments": {"app": app, "tool": tool, "args": args}}


def outcome(answer: dict[str, Any]) -> str:
    """The text of a tool result, or of a JSON-RPC error."""
    if "error" in answer:
        return f"error {answer['error']['code']}: {answer['error']['message']}"
    return " ".join(block.get("text", "") for block in answer["result"]["content"])


def timed_out(text: str, seconds: int) -> bool:
    """Whether a call's answer is TIMEOUT after `seconds` (counted from the request's arrival)."""
    said = (f"within {seconds} s", f"its timeout is {seconds} s", f"(timeout {seconds} s)")
    return text.startswith("TIMEOUT") and any(words in text for words in said)


async def timed(client: RawClient, app: str, tool: str, **args: Any) -> tuple[float, str]:
    began = time.monotonic()
    answer = await client.message("tools/call", exec_args(app, tool, **args))
    return time.monotonic() - began, outcome(answer)


@pytest.mark.hostile("limits")
async def test_a_hung_app_leaves_slots_to_the_others(bus: Bus, echo_app: None, napper: Napper, tmp_path: Path) -> None:
    """Sixteen hung calls to one app (the old gateway-wide limit) do not hold up a call to another."""
    env = make_env(bus, tmp_path)
    async with raw_session(env, tmp_path / "stderr.log", "limits") as client:
        hung = [client.start("tools/call", exec_args(ECHO, "slow", seconds=8))[1] for _ in range(16)]
        await asyncio.sleep(0.5)
        seconds, text = await timed(client, NAPPER, "nap", seconds=0)
        assert text == "rested"
        assert seconds < 3, f"a call to another app waited {seconds:.1f} s behind a hung app"
        assert not any(call.done() for call in hung)
        assert [outcome(answer) for answer in await asyncio.gather(*hung)] == ["slept"] * 16


@pytest.mark.hostile("limits")
async def test_one_app_keeps_sixteen_calls_in_flight_by_default(bus: Bus, napper: Napper, tmp_path: Path) -> None:
    env = make_env(bus, tmp_path)
    async with raw_session(env, tmp_path / "stderr.log", "limits") as client:
        answers = await asyncio.gather(*(timed(client, NAPPER, "nap", seconds=0.5) for _ in range(20)))
        assert [text for _, text in answers] == ["rested"] * 20
        assert napper.peak == 16, "maxCallsPerApp defaults to 16"


@pytest.mark.hostile("limits")
@pytest.mark.parametrize(
    ("config", "peak"),
    [
        ({"maxCallsPerApp": 3}, 3),
        ({"apps": {NAPPER: {"maxConcurrentCalls": 2}}}, 2),
        ({"maxCallsPerApp": 6, "apps": {ECHO: {"maxConcurrentCalls": 1}}}, 6),
        ({"maxConcurrentCalls": 4, "maxCallsPerApp": 10}, 4),
    ],
)
async def test_per_app_limits_bound_one_app(
    bus: Bus, napper: Napper, tmp_path: Path, config: dict[str, Any], peak: int
) -> None:
    env = make_env(bus, tmp_path, **config)
    async with raw_session(env, tmp_path / "stderr.log", "limits") as client:
        answers = await asyncio.gather(*(timed(client, NAPPER, "nap", seconds=0.3) for _ in range(12)))
        assert [text for _, text in answers] == ["rested"] * 12
        assert napper.peak == peak


@pytest.mark.hostile("limits")
async def test_the_apps_timeout_shortens_a_tools_own(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    """`slow` declares 20 s; the user's `apps.<id>.timeout` of 1 s wins."""
    env = make_env(bus, tmp_path, apps={ECHO: {"timeout": 1}})
    async with raw_session(env, tmp_path / "stderr.log", "limits") as client:
        await client.message("tools/call", exec_args(ECHO, "echo", text="warm"))  # connected: only the rule is timed
        seconds, text = await timed(client, ECHO, "slow", seconds=5)
        assert timed_out(text, 1), text
        assert seconds < 2.5


@pytest.mark.hostile("limits")
async def test_the_tools_timeout_beats_the_default(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    """`sleep` declares 1 s: it ends after 1 s although defaultTimeout is longer; `echo` keeps the default."""
    env = make_env(bus, tmp_path, defaultTimeout=60)
    async with raw_session(env, tmp_path / "stderr.log", "limits") as client:
        await client.message("tools/call", exec_args(ECHO, "echo", text="warm"))  # connected: only the rule is timed
        seconds, text = await timed(client, ECHO, "sleep", seconds=5)
        assert timed_out(text, 1), text
        assert seconds < 2.5


@pytest.mark.hostile("limits")
async def test_the_first_call_of_a_session_keeps_its_timeout(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    """The first call, sent while the gateway still imports the MCP SDK after answering initialize and
    tools/list, is timed from its arrival: the whole call is within its 1 s."""
    env = make_env(bus, tmp_path)
    async with raw_session(env, tmp_path / "stderr.log", "limits") as client:
        seconds, text = await timed(client, ECHO, "sleep", seconds=5)
        assert timed_out(text, 1), text
        assert seconds < 1.3, f"a call with a 1 s timeout took {seconds:.2f} s"


def config_problem(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True, exist_ok=True)
    (home / ".aai" / "config.json").write_text(text, "utf-8")
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "AAI_PLATFORM": "linux"}
    return subprocess.run([gateway_command(), "apps"], env=env, capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.hostile("limits")
@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"defaultTimeout": NaN}', "defaultTimeout"),
        ('{"defaultTimeout": Infinity}', "defaultTimeout"),
        ('{"defaultTimeout": 1e400}', "defaultTimeout"),
        ('{"defaultTimeout": 1e12}', "defaultTimeout"),
        ('{"web": {"timeout": -Infinity}}', "web/timeout"),
        ('{"apps": {"dev.aai.echo": {"timeout": NaN}}}', "apps/dev.aai.echo/timeout"),
        ('{"apps": {"dev.aai.echo": {"timeout": 1e400}}}', "apps/dev.aai.echo/timeout"),
        ('{"consent": {"waitSeconds": NaN}}', "consent/waitSeconds"),
        ('{"maxCallsPerApp": 0}', "maxCallsPerApp"),
        ('{"apps": {"dev.aai.echo": {"maxConcurrentCalls": 1000}}}', "apps/dev.aai.echo/maxConcurrentCalls"),
    ],
)
def test_absurd_numbers_in_the_config_are_refused(tmp_path: Path, text: str, key: str) -> None:
    done = config_problem(tmp_path, text)
    assert done.returncode != 0
    assert f"key '{key}'" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.hostile("limits")
@pytest.mark.parametrize("timeout", ["1e400", "-1e400", "1e9", "NaN", "Infinity"])
def test_absurd_tool_timeouts_are_refused_by_validate(tmp_path: Path, timeout: str) -> None:
    text = (TEST_APPS / "dev.aai.echo" / "aai.json").read_text("utf-8")
    at = text.index('"timeout": 1\n')
    path = tmp_path / "aai.json"
    path.write_text(text[:at] + f'"timeout": {timeout}\n' + text[at + len('"timeout": 1\n') :], "utf-8")
    done = subprocess.run(
        [gateway_command(), "validate", "--json", str(path)], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    found = json.dumps(report)
    if timeout in ("NaN", "Infinity"):
        assert "not a JSON value" in found, found
    else:
        assert "/platforms/linux/tools/6/timeout" in found, found


@pytest.mark.hostile("limits")
@pytest.mark.parametrize("fast", [True, False], ids=["fast-stdio", "sdk-stdio"])
@pytest.mark.parametrize("method", ["tools/call", "tools/list", "resources/list"])
async def test_a_request_before_initialize_says_so(tmp_path: Path, fast: bool, method: str) -> None:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    (home / ".aai" / "config.json").write_text(json.dumps({"fastStdio": fast}), "utf-8")
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "AAI_PLATFORM": "linux"}
    params = {"name": "aai_exec", "arguments": {"app": ECHO, "tool": "echo", "args": {"text": "x"}}}
    client = await spawn(env, tmp_path / "stderr.log")
    try:
        answer = await asyncio.wait_for(client.message(method, params if method == "tools/call" else {}), 30)
        assert answer["error"]["code"] == -32602
        assert "not initialised" in answer["error"]["message"], answer
        assert "send initialize" in answer["error"]["message"]
        await asyncio.wait_for(client.initialize("late"), 30)  # the session can still begin
    finally:
        await client.aclose()


def memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for process {pid}")


CALLS = 40
ANSWER_BYTES = 1 << 20
GROWTH_BOUND_MB = 100
"""Before backpressure the gateway grew by 166 MB here (to 244 MB). Now stdin pauses while 4 MB of
answers wait to be written or 16 MB of requests wait to be answered: each waiting request holds about
four copies of its 1 MB argument (the line, the parsed text, the DBus message, the reply), so some
64 MB, plus the 4 MB backlog held twice (encoded, and in the pipe's buffer); 100 MB leaves room for
the allocator. Measured after: 32 to 70 MB."""


def send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def receive(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert proc.stdout is not None
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


@pytest.mark.hostile("limits")
@pytest.mark.parametrize("fast", [True, False], ids=["pipes", "threads"])
def test_a_client_that_stops_reading_does_not_grow_the_gateway(
    bus: Bus, echo_app: None, tmp_path: Path, fast: bool
) -> None:
    """40 calls each answering 1 MB, from a client that reads nothing until all are sent: the gateway stops
    taking calls while its answers wait, and its peak memory stays bounded; every answer arrives after."""
    env = make_env(bus, tmp_path, fastStdio=fast)
    with (tmp_path / "stderr.log").open("a") as errlog:
        proc = subprocess.Popen(
            [gateway_command(), "--mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, env=env
        )
    try:
        client = {"name": "limits", "version": "1"}
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client}
        send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        assert "result" in receive(proc)
        send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        for warm in range(1, 3):  # the fast path takes calls after the first
            warm_call = exec_args(ECHO, "echo", text="w")
            send(proc, {"jsonrpc": "2.0", "id": warm, "method": "tools/call", "params": warm_call})
            assert outcome(receive(proc)) == "w"
        at_rest = memory_kb(proc.pid, "VmRSS")
        text = "x" * ANSWER_BYTES

        def flood() -> None:
            for n in range(CALLS):
                call = exec_args(ECHO, "echo", text=text)
                send(proc, {"jsonrpc": "2.0", "id": 100 + n, "method": "tools/call", "params": call})

        writer = threading.Thread(target=flood, daemon=True)
        writer.start()
        time.sleep(8)  # nothing is read meanwhile; the gateway does what it can
        peak = memory_kb(proc.pid, "VmHWM")
        answers = [receive(proc) for _ in range(CALLS)]
        writer.join(30)
        assert sorted(a["id"] for a in answers) == list(range(100, 100 + CALLS))
        assert all(outcome(a) == text for a in answers)
        grown = (peak - at_rest) / 1024
        assert grown < GROWTH_BOUND_MB, f"the gateway peaked at {peak / 1024:.0f} MB (+{grown:.0f} MB over at rest)"
    finally:
        stop(proc)


@pytest.mark.hostile("limits")
@pytest.mark.parametrize("session", [None, "no-such-session"], ids=["no-session", "unknown-session"])
def test_a_request_before_initialize_over_http_says_why(tmp_path: Path, session: str | None) -> None:
    """Over HTTP a session exists only once `initialize` is answered: without one the refusal says so."""
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "AAI_PLATFORM": "linux"}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    if session is not None:
        headers["Mcp-Session-Id"] = session
    with web_gateway(env, tmp_path / "stderr.log") as url:
        answer = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
    assert answer.status_code == (400 if session is None else 404)
    error = answer.json()["error"]
    assert error["code"] == -32600
    assert error["message"] == ("Bad Request: Missing session ID" if session is None else "Session not found")

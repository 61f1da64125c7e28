"""Calls over stdio answered on the gateway's fast path are answered exactly as the SDK's path answers them.

Once one request of a session is served, `aai:exec` and `<appId>:<tool>` calls are taken straight off
the wire. The same requests must get the same answers as from a gateway with `fastStdio` off (the SDK
alone), cancellation must stop a call without an answer, and stdin that is a regular file still works.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.raw_client import raw_session
from tests.support import Bus, echo_home, gateway_command, until_echo_called

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CALLER = "raw-tests"


def env_of(bus: Bus, tmp_path: Path, **config: Any) -> dict[str, str]:
    echo_home(tmp_path / "home", CALLER, **config)
    return bus.env(HOME=str(tmp_path / "home"), AAI_PLATFORM="linux")


CASES: list[tuple[str, dict[str, Any]]] = [
    ("aai:exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": 'hé "quoted" \n$(id)'}}),
    ("dev.aai.echo:describe", {}),
    ("aai:exec", {"app": "dev.aai.echo", "tool": "nope", "args": {}}),
    ("aai:exec", {"app": "dev.aai.missing", "tool": "echo"}),
    ("aai:exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": 5}}),
    ("aai:exec", {"app": "dev.aai.echo", "tool": "echo", "args": "text"}),
    ("aai:exec", {"app": "dev.aai.echo"}),
    ("dev.aai.echo:fail", {}),
    ("aai_exec", {"app": "dev.aai.echo", "tool": "add", "args": {"a": 2, "b": 3}}),
]


@pytest.mark.parametrize("style", ["jsonrpc", "result"])
async def test_the_fast_path_answers_as_the_sdk_does(bus: Bus, echo_app: None, tmp_path: Path, style: str) -> None:
    found: dict[bool, list[dict[str, Any]]] = {}
    for fast in (True, False):
        env = env_of(bus, tmp_path, errorStyle=style, fastStdio=fast)
        async with raw_session(env, tmp_path / "stderr.log", CALLER) as client:
            found[fast] = [
                await client.message("tools/call", {"name": name, "arguments": arguments}) for name, arguments in CASES
            ]
        assert client.unmatched == []
    assert found[True] == found[False]
    assert found[True][0]["result"]["content"][0]["text"] == CASES[0][1]["args"]["text"]


async def test_a_cancelled_call_gets_no_answer_and_is_recorded(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    env = env_of(bus, tmp_path)
    async with raw_session(env, tmp_path / "stderr.log", CALLER) as client:
        slow = {"name": "aai:exec", "arguments": {"app": "dev.aai.echo", "tool": "slow", "args": {"seconds": 30}}}
        before = bus.echo_calls()
        request_id, answer = client.start("tools/call", slow)
        await until_echo_called(bus, before)
        client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}})
        echo = {"name": "aai:exec", "arguments": {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "next"}}}
        assert (await client.request("tools/call", echo))["content"][0]["text"] == "next"
        assert not answer.done()
        answer.cancel()
    assert client.unmatched == []
    shown = subprocess.run(
        [gateway_command(), "history", "--json", "--tool", "slow"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    records = json.loads(shown.stdout)
    assert [(r["status"], r["error"]["type"]) for r in records] == [("error", "CANCELLED")]


async def test_many_calls_in_flight_each_get_their_own_answer(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    env = env_of(bus, tmp_path)
    async with raw_session(env, tmp_path / "stderr.log", CALLER) as client:
        texts = [f"call {i}" for i in range(200)]
        calls = [
            client.request("tools/call", {"name": "dev.aai.echo:echo", "arguments": {"text": text}}) for text in texts
        ]
        answers = await asyncio.gather(*calls)
    assert [a["content"][0]["text"] for a in answers] == texts


def test_stdin_from_a_file_is_served_too(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    """A regular file cannot be watched by the event loop; the SDK's threaded transport takes it.

    At the file's end the SDK cancels whatever is still running, so whether `initialize` is answered
    depends on timing: what is checked is a clean exit with nothing but protocol on stdout.
    """
    env = env_of(bus, tmp_path)
    requests = tmp_path / "requests.jsonl"
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": CALLER, "version": "1"}},
    }
    requests.write_text(json.dumps(initialize) + "\n")
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [gateway_command(), "--mcp"], stdin=stdin, capture_output=True, env=env, timeout=60, check=False
        )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(a["id"] == 1 and a["result"]["serverInfo"]["name"] == "aai-gateway" for a in answers)


@pytest.mark.parametrize("stdin_from", ["file", "null"])
def test_stdout_to_a_file_is_served_too(bus: Bus, echo_app: None, tmp_path: Path, stdin_from: str) -> None:
    """Neither a regular file nor the null device can be watched by the event loop (uvloop would abort)."""
    env = env_of(bus, tmp_path)
    requests = tmp_path / "requests.jsonl"
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": CALLER, "version": "1"}}
    requests.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n")
    answers = tmp_path / "answers.jsonl"
    with (requests if stdin_from == "file" else Path("/dev/null")).open("rb") as stdin, answers.open("wb") as stdout:
        done = subprocess.run(
            [gateway_command(), "--mcp"],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=env,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    lines = answers.read_bytes().splitlines()
    assert all(json.loads(line)["id"] == 1 for line in lines)

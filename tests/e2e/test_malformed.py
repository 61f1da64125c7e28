"""Every malformed message gets the answer JSON-RPC gives it, on stdio and HTTP, fast paths on or off.

After each case a ping shows what, if anything, was answered in between; after the whole corpus a
call still works, so a malformed message never ends the session or the gateway.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.malformed import CASES, ECHO, PING, Case
from tests.e2e.raw_client import raw_session
from tests.e2e.test_http_fast import gateway, raw
from tests.e2e.test_stdio_fast import CALLER, env_of
from tests.support import Bus, gateway_command, stop

INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def expected(case: Case) -> dict[str, Any] | None:
    return None if case.code is None else {"jsonrpc": "2.0", "id": case.id, "code": case.code}


def shape(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer's parts that must be exact; the message must say which kind of error it is."""
    assert set(answer) == {"jsonrpc", "id", "error"}, answer
    assert set(answer["error"]) == {"code", "message"}, answer
    prefix = "Parse error: " if answer["error"]["code"] == -32700 else "Invalid Request: "
    assert answer["error"]["message"].startswith(prefix), answer
    return {"jsonrpc": answer["jsonrpc"], "id": answer["id"], "code": answer["error"]["code"]}


async def test_stdio_answers_each_malformed_message_by_the_book(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    whole: dict[bool, list[Any]] = {}
    for fast in (True, False):
        env = env_of(bus, tmp_path, fastStdio=fast)
        async with raw_session(env, tmp_path / "stderr.log", CALLER) as client:
            assert client.proc.stdin is not None
            found = {}
            for case in CASES:
                client.proc.stdin.write(case.data + b"\n")
                pong = await client.message("ping", {})
                assert pong["result"] == {}, (case.name, pong)
                between, client.unmatched[:] = list(client.unmatched), []
                found[case.name] = [shape(answer) for answer in between]
                whole.setdefault(fast, []).append(between)
            client.proc.stdin.write(b"\n  \n")  # blank lines are skipped
            answer = await client.request("tools/call", ECHO)
            assert answer["content"][0]["text"] == "x"
        assert found == {case.name: [expected(case)] if case.code is not None else [] for case in CASES}
        assert client.proc.returncode == 0
    assert whole[True] == whole[False]  # the same words too, whichever path serves
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


async def test_http_answers_each_malformed_message_by_the_book(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    whole: dict[bool, list[Any]] = {}
    for fast in (True, False):
        log = tmp_path / f"{fast}.log"
        found: dict[str, Any] = {}
        with gateway(bus, tmp_path / f"home-{fast}", log, fastHttp=fast) as url:
            async with raw(url) as session:
                for case in CASES:
                    if case.stdio_only:
                        continue
                    response = await session.post(case.data)
                    whole.setdefault(fast, []).append((response.status_code, response.content))
                    if case.code is None:
                        found[case.name] = (response.status_code, response.content)
                    else:
                        found[case.name] = (response.status_code, shape(response.json()))
                    assert (await session.post(PING)).json() == {"jsonrpc": "2.0", "id": 9001, "result": {}}
                answer = await session.call(ECHO["name"], ECHO["arguments"])
                assert answer.json()["result"]["content"][0]["text"] == "x"
        assert found == {
            case.name: (202, b"") if case.code is None else (400, expected(case))
            for case in CASES
            if not case.stdio_only
        }
        assert "Traceback" not in log.read_text()
    assert whole[True] == whole[False]  # byte for byte


def test_malformed_lines_before_initialize_are_answered_and_the_session_starts(bus: Bus, tmp_path: Path) -> None:
    """The first lines of a session are read before the SDK is imported (fastStdio): a malformed one there
    gets the same answer as later, with the fast paths on or off, and `initialize` still works after it."""
    before = [case for case in CASES if case.code is not None][::6]
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE}).encode()
    answers: dict[bool, list[bytes]] = {}
    for fast in (True, False):
        proc = subprocess.Popen(
            [gateway_command(), "--mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env_of(bus, tmp_path / f"home-{fast}", fastStdio=fast),
        )
        try:
            assert proc.stdin is not None
            assert proc.stdout is not None
            for case in before:
                proc.stdin.write(case.data + b"\n")
            proc.stdin.write(initialize + b"\n")
            proc.stdin.flush()
            lines = [proc.stdout.readline() for _ in range(len(before) + 1)]
            found = [shape(json.loads(line)) for line in lines[:-1]]
            assert found == [expected(case) for case in before]
            assert json.loads(lines[-1])["result"]["serverInfo"]["name"] == "aai-gateway"
            answers[fast] = lines[:-1]
        finally:
            stop(proc)
    assert answers[True] == answers[False]

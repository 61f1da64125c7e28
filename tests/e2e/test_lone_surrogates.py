"""Half a surrogate pair (a lone `\\ud800` JSON escape) in a call's arguments is that call's INVALID_PARAMS.

It names the field, is answered on every path (stdio and HTTP, fast paths on and off, `aai-gateway
call`) and is recorded in the history like any other call; nothing reaches the app.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.raw_client import RawClient, raw_session, spawn
from tests.e2e.test_http_fast import gateway, raw
from tests.e2e.test_stdio_fast import CALLER, env_of
from tests.support import Bus, gateway_command

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

# (arguments of aai_exec as raw JSON, the field the answer must name)
CASES: list[tuple[bytes, str]] = [
    (b'{"app":"dev.aai.echo","tool":"echo","args":{"text":"\\ud800"}}', "args.text"),
    (b'{"app":"dev.aai.echo","tool":"echo","args":{"text":"a\\udfffb"}}', "args.text"),
    (b'{"app":"dev.aai.echo","tool":"echo","args":{"text":["x","\\udc00"]}}', "args.text.1"),  # schema-invalid too
    (b'{"app":"dev.aai.echo","tool":"echo","args":{"te\\ud800xt":"x"}}', "args.te\\ud800xt"),
    (b'{"app":"dev.aai.echo","tool":"echo","args":{"nope":{"deep":"\\ud800"}}}', "args.nope.deep"),
    (b'{"app":"dev.aai.\\ud800","tool":"echo","args":{}}', "app"),
    (b'{"app":"dev.aai.echo","tool":"ec\\udbffho","args":{}}', "tool"),
]
IDS = ["lone high", "lone low inside", "in an array", "in a key", "nested", "in the app id", "in the tool name"]


def call_line(request_id: int, arguments: bytes) -> bytes:
    head = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"aai_exec","arguments":' % request_id
    return head + arguments + b"}}"


def refused(answer: dict[str, Any], field: str) -> None:
    result = answer["result"]
    assert result["isError"] is True, answer
    text = result["content"][0]["text"]
    assert "INVALID_PARAMS" in text or "Invalid parameters" in text, text
    assert f"{field} holds half of a surrogate pair" in text, text


async def answer_to(client: RawClient, request_id: int, data: bytes) -> dict[str, Any]:
    assert client.proc.stdin is not None
    client.proc.stdin.write(data + b"\n")
    for _ in range(300):
        for message in client.unmatched:
            if message.get("id") == request_id:
                client.unmatched.remove(message)
                return message
        await asyncio.sleep(0.05)
    raise AssertionError(f"no answer to request {request_id}")


def recorded(env: dict[str, str]) -> list[dict[str, Any]]:
    out = subprocess.run(
        [gateway_command(), "history", "--json"], env=env, capture_output=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    records: list[dict[str, Any]] = json.loads(out.stdout)
    return records


@pytest.mark.hostile("encoding")
@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "sdk"])
async def test_stdio_answers_and_records_a_lone_surrogate(
    bus: Bus, echo_app: None, tmp_path: Path, case: tuple[bytes, str], fast: bool
) -> None:
    arguments, field = case
    env = env_of(bus, tmp_path, fastStdio=fast)
    async with raw_session(env, tmp_path / "stderr.log", CALLER) as client:
        await client.request(
            "tools/call",
            {"name": "aai_exec", "arguments": {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "w"}}},
        )
        refused(await answer_to(client, 7001, call_line(7001, arguments)), field)
        ping = await client.message("ping", {})
        assert ping["result"] == {}
    [record, _] = recorded(env)
    assert record["error"]["type"] == "INVALID_PARAMS", record
    assert "surrogate" in record["error"]["detail"]
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


@pytest.mark.hostile("encoding")
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "sdk"])
async def test_http_answers_and_records_a_lone_surrogate(bus: Bus, echo_app: None, tmp_path: Path, fast: bool) -> None:
    log = tmp_path / "gateway.log"
    with gateway(bus, tmp_path / "home", log, fastHttp=fast) as url:
        async with raw(url) as session:
            for index, (arguments, field) in enumerate(CASES):
                response = await session.post(call_line(8000 + index, arguments))
                assert response.status_code == 200, response.text
                refused(response.json(), field)
    records = recorded(bus.env(HOME=str(tmp_path / "home"), AAI_PLATFORM="linux"))
    assert len(records) == len(CASES)
    assert {r["error"]["type"] for r in records} == {"INVALID_PARAMS"}
    assert "Traceback" not in log.read_text()


@pytest.mark.hostile("encoding")
def test_the_command_line_call_refuses_a_lone_surrogate(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    env = env_of(bus, tmp_path)
    out = subprocess.run(
        [gateway_command(), "call", "dev.aai.echo", "echo", '{"text": "\\ud800"}'],
        env=env,
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert out.returncode == 1
    assert b"args.text holds half of a surrogate pair" in out.stderr, out.stderr
    assert b"INVALID_PARAMS" in out.stderr
    [record] = recorded(env)
    assert (record["caller"], record["error"]["type"]) == ("cli", "INVALID_PARAMS")


BATCH = (
    b'{"jsonrpc":"2.0","id":7002,"method":"tools/call","params":{"name":"aai_batch","arguments":{"calls":['
    b'{"app":"dev.aai.echo","tool":"echo","args":{"text":"\\ud800"}},'
    b'{"app":"dev.aai.echo","tool":"echo","args":{"text":"ok"}}]}}}'
)


@pytest.mark.hostile("encoding")
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "sdk"])
async def test_a_batch_refuses_only_the_call_holding_a_lone_surrogate(
    bus: Bus, echo_app: None, tmp_path: Path, fast: bool
) -> None:
    env = env_of(bus, tmp_path, fastStdio=fast)
    async with raw_session(env, tmp_path / "stderr.log", CALLER) as client:
        await client.request(
            "tools/call",
            {"name": "aai_exec", "arguments": {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "w"}}},
        )
        answer = await answer_to(client, 7002, BATCH)
    report = answer["result"]["structuredContent"]
    first, second = report["results"]
    assert (first["status"], first["error"]["type"]) == ("error", "INVALID_PARAMS"), report
    assert first["error"]["detail"].startswith("args.text holds half of a surrogate pair")
    assert second["status"] == "ok"
    assert sorted(r["status"] for r in recorded(env)) == ["error", "ok", "ok"]


# Each call below is sent twice, once holding half a surrogate pair in its arguments and once with plain
# text there: where the call cannot run (no session yet, no such tool) both get the same answer, and where
# it can, the half is its INVALID_PARAMS, answered and recorded.
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": CALLER, "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def surrogate_and_plain(request_id: int, name: str, meta: dict[str, Any] | None = None) -> tuple[bytes, bytes]:
    params = {"name": name, "arguments": {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "HALF"}}}
    if meta is not None:
        params["_meta"] = meta
    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()
    return line.replace(b"HALF", b"\\ud800"), line.replace(b"HALF", b"plain")


def same_refusal(half: dict[str, Any], plain: dict[str, Any]) -> None:
    assert "error" in plain or plain["result"].get("isError"), plain
    half, plain = dict(half), dict(plain)
    half.pop("id")
    plain.pop("id")
    assert half == plain


@pytest.mark.hostile("encoding")
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "sdk"])
async def test_stdio_serves_a_lone_surrogate_in_the_first_call_and_in_the_2026_era(
    bus: Bus, echo_app: None, tmp_path: Path, fast: bool
) -> None:
    env = env_of(bus, tmp_path, fastStdio=fast)
    async with raw_session(env, tmp_path / "stderr.log", CALLER, list_tools=False) as client:
        refused(await answer_to(client, 7001, call_line(7001, CASES[0][0])), "args.text")
    client = await spawn(env, tmp_path / "stderr.log")
    try:
        half, _ = surrogate_and_plain(7002, "aai_exec", MODERN)
        refused(await answer_to(client, 7002, half), "args.text")
    finally:
        await client.aclose()
    records = recorded(env)
    assert [r["error"]["type"] for r in records] == ["INVALID_PARAMS", "INVALID_PARAMS"], records
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


@pytest.mark.hostile("encoding")
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "sdk"])
async def test_stdio_refuses_a_call_that_cannot_run_alike_with_or_without_a_lone_surrogate(
    bus: Bus, echo_app: None, tmp_path: Path, fast: bool
) -> None:
    env = env_of(bus, tmp_path, fastStdio=fast)
    client = await spawn(env, tmp_path / "stderr.log")
    try:  # before initialize
        half, plain = surrogate_and_plain(7003, "aai_exec")
        first = await answer_to(client, 7003, half)
        same_refusal(first, await answer_to(client, 7004, plain.replace(b"7003", b"7004")))
    finally:
        await client.aclose()
    async with raw_session(env, tmp_path / "stderr.log", CALLER) as client:
        half, plain = surrogate_and_plain(7005, "no_such_tool")
        first = await answer_to(client, 7005, half)
        same_refusal(first, await answer_to(client, 7006, plain.replace(b"7005", b"7006")))
    assert recorded(env) == []


@pytest.mark.hostile("encoding")
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "sdk"])
async def test_http_refuses_a_call_that_cannot_run_alike_with_or_without_a_lone_surrogate(
    bus: Bus, echo_app: None, tmp_path: Path, fast: bool
) -> None:
    log = tmp_path / "gateway.log"
    with gateway(bus, tmp_path / "home", log, fastHttp=fast) as url:
        async with raw(url) as session:
            for name in ("no_such_tool",):
                half, plain = surrogate_and_plain(9001, name)
                first, second = await session.post(half), await session.post(plain)
                assert first.status_code == second.status_code == 200
                same_refusal(first.json(), second.json())
            known = session.session
            for sid in ("", "no-such-session"):
                session.session = sid
                half, plain = surrogate_and_plain(9002, "aai_exec")
                first, second = await session.post(half), await session.post(plain)
                assert (first.status_code, first.text) == (second.status_code, second.text)
                assert first.status_code >= 400
            session.session = known
            half, _ = surrogate_and_plain(9003, "aai_exec", MODERN)
            modern_headers = {"mcp-protocol-version": "2026-07-28", "mcp-session-id": "", "mcp-method": "tools/call"}
            modern = await session.post(half, **modern_headers, **{"mcp-name": "aai_exec"})
            assert modern.status_code == 200, modern.text
            refused(modern.json(), "args.text")
    records = recorded(bus.env(HOME=str(tmp_path / "home"), AAI_PLATFORM="linux"))
    assert [r["error"]["type"] for r in records] == ["INVALID_PARAMS"], records
    assert "Traceback" not in log.read_text()

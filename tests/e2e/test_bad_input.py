"""Bad input over HTTP gets the protocol's error, and the gateway keeps serving everyone else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.e2e.mcp_client import http_session, stdio_session, text_of, web_gateway
from tests.support import TEST_APPS, Bus, install_descriptor, until_echo_called

pytestmark = [pytest.mark.e2e]

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def exec_request(request_id: int, arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "aai_exec", "arguments": arguments},
    }


@pytest.fixture
def url(bus: Bus, echo_app: None, tmp_path: Path) -> Iterator[str]:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    allow_raw = {"consent": {"rules": [{"caller": "raw", "app": "dev.aai.echo", "decision": "allow"}]}}
    (home / ".aai" / "config.json").write_text(json.dumps(allow_raw))  # raw clients cannot be asked
    with web_gateway(bus.env(HOME=str(home), AAI_PLATFORM="linux"), tmp_path / "stderr.log") as address:
        yield address


class RawSession:
    """One MCP session spoken by hand, to send what a well-behaved client never would."""

    def __init__(self, url: str, timeout: float = 10) -> None:
        self.url = url
        self.client = httpx2.Client(timeout=timeout)
        reply = self.client.post(url, content=json.dumps(INITIALIZE), headers=HEADERS)
        assert reply.status_code == 200, reply.text
        self.headers = {
            **HEADERS,
            "mcp-session-id": reply.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        self.post_raw(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def post_raw(self, body: bytes, **headers: str) -> httpx2.Response:
        return self.client.post(self.url, content=body, headers={**self.headers, **headers})

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        reply = self.post_raw(json.dumps(message).encode())
        assert reply.status_code == 200, reply.text
        body: dict[str, Any] = reply.json()
        return body

    def close(self) -> None:
        self.client.close()


def tool_error(answer: dict[str, Any]) -> dict[str, Any]:
    """The `{code, type, detail}` of a failed tool call: an `isError` result, as the gateway answers by default."""
    assert answer["result"]["isError"] is True, answer
    error: dict[str, Any] = answer["result"]["structuredContent"]["error"]
    return error


def test_each_bad_request_gets_its_error_and_the_session_goes_on(url: str) -> None:
    raw = RawSession(url)
    try:
        malformed = raw.post_raw(b"{not json")
        assert malformed.status_code == 400
        assert malformed.json()["error"]["code"] == -32700

        unknown = raw.call({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"})
        assert unknown["error"]["code"] == -32601

        not_object = tool_error(raw.call(exec_request(3, {"app": "dev.aai.echo", "tool": "echo", "args": [1]})))
        assert (not_object["code"], not_object["type"]) == (-32005, "INVALID_PARAMS")
        assert "'args' as an object" in not_object["detail"]

        no_app = tool_error(raw.call(exec_request(4, {"tool": "echo"})))
        assert no_app["code"] == -32005
        assert "'app'" in no_app["detail"]

        wrong_shape = raw.call(exec_request(5, "not an object"))
        assert wrong_shape["error"]["code"] == -32602

        huge = raw.post_raw(
            json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"x": "y" * 5_000_000}}).encode()
        )
        assert huge.status_code == 413

        rebinding = raw.post_raw(
            json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}).encode(), Host="evil.example"
        )
        assert rebinding.status_code == 421

        fine = raw.call(exec_request(8, {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "still here"}}))
        assert fine["result"]["content"][0]["text"] == "still here"
    finally:
        raw.close()


def test_a_client_that_disconnects_mid_call_does_not_hurt_others(url: str) -> None:
    impatient = RawSession(url, timeout=0.3)
    with pytest.raises(httpx2.TimeoutException):
        impatient.call(exec_request(2, {"app": "dev.aai.echo", "tool": "sleep", "args": {"seconds": 0.8}}))
    impatient.close()

    other = RawSession(url)
    try:
        reply = other.call(exec_request(2, {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "next"}}))
        assert reply["result"]["content"][0]["text"] == "next"
        counted = other.call(exec_request(3, {"app": "dev.aai.echo", "tool": "calls", "args": {}}))
        assert int(counted["result"]["content"][0]["text"]) >= 2
    finally:
        other.close()


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_slow_call_does_not_hold_up_a_fast_one(
    bus: Bus, echo_app: None, tmp_path: Path, transport: str
) -> None:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    env = bus.env(HOME=str(home), AAI_PLATFORM="linux")
    finished: list[str] = []

    async def run(session: Any) -> None:
        before = bus.echo_calls()

        async def slow() -> None:
            await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "sleep", "args": {"seconds": 0.6}})
            finished.append("slow")

        async def fast() -> None:
            await until_echo_called(bus, before)  # the slow call is running in the app
            result = await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "f"}})
            assert text_of(result) == "f"
            finished.append("fast")

        async with anyio.create_task_group() as group:
            group.start_soon(slow)
            group.start_soon(fast)

    if transport == "stdio":
        async with stdio_session(env, tmp_path / "stderr.log") as session:
            await run(session)
    else:
        with web_gateway(env, tmp_path / "stderr.log") as address:
            async with http_session(address) as session:
                await run(session)
    assert finished == ["fast", "slow"]

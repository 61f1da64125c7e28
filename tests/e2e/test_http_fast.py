"""Calls over HTTP answered in front of the SDK's transport are answered exactly as the SDK answers them.

Once a request of a session has been served, POSTs of `aai:exec` and `<appId>:<tool>` calls that
the SDK would accept are answered by the gateway's ASGI front. The same requests, good and bad,
must get the same status and body as from a gateway with `fastHttp` off (the SDK alone); a session
that was ended is not served; a cancelled call is answered as cancelled; consent is still asked.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.e2e.mcp_client import Consenter, http_session, text_of, web_gateway
from tests.support import Bus, echo_home, gateway_command, until_echo_called

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CALLER = "raw-http-tests"
PROTOCOL = "2025-06-18"
TAKEN = "answered in front of the SDK"
JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def env_of(bus: Bus, home: Path, *, rules: bool = True, **config: Any) -> dict[str, str]:
    echo_home(home, CALLER if rules else None, **{"logLevel": "debug", **config})
    return bus.env(HOME=str(home), AAI_PLATFORM="linux")


class Raw:
    """JSON-RPC over one kept-alive connection, with the session id the gateway gave."""

    def __init__(self, client: httpx2.AsyncClient, url: str) -> None:
        self.client = client
        self.url = url
        self.ids = itertools.count(1)
        self.session = ""

    async def post(self, body: Any, **headers: str) -> httpx2.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent = {**JSON_HEADERS, "mcp-session-id": self.session, "mcp-protocol-version": PROTOCOL, **headers}
        return await self.client.post(self.url, content=content, headers={k: v for k, v in sent.items() if v})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}

    async def call(self, name: str, arguments: dict[str, Any]) -> httpx2.Response:
        return await self.post(self.request("tools/call", {"name": name, "arguments": arguments}))


@asynccontextmanager
async def raw(url: str) -> AsyncIterator[Raw]:
    async with httpx2.AsyncClient(timeout=60) as client:
        session = Raw(client, url)
        hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": CALLER, "version": "1"}}
        opened = await session.post(session.request("initialize", hello))
        assert opened.status_code == 200, opened.text
        session.session = opened.headers["mcp-session-id"]
        assert (await session.post({"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202
        listed = await session.post(session.request("tools/list", {}))  # the session is known from here on
        assert listed.status_code == 200, listed.text
        yield session


@contextmanager
def gateway(bus: Bus, home: Path, log: Path, **config: Any) -> Iterator[str]:
    with web_gateway(env_of(bus, home, **config), log) as url:
        yield url


def seen(response: httpx2.Response) -> tuple[int, str | None, Any]:
    """What a client sees of an answer: status, content type, and the body (parsed when it is JSON)."""
    kind = response.headers.get("content-type")
    try:
        body: Any = response.json() if response.content else None
    except ValueError:
        body = response.text
    return response.status_code, kind, body


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("aai:exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": 'hé "quoted" \n$(id)'}}),
    ("dev.aai.echo:describe", {}),
    ("aai:exec", {"app": "dev.aai.echo", "tool": "nope", "args": {}}),
    ("aai:exec", {"app": "dev.aai.missing", "tool": "echo"}),
    ("aai:exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": 5}}),
    ("aai:exec", {"app": "dev.aai.echo", "tool": "echo", "args": "text"}),
    ("dev.aai.echo:fail", {}),
    ("aai_exec", {"app": "dev.aai.echo", "tool": "add", "args": {"a": 2, "b": 3}}),
]


@pytest.mark.parametrize("style", ["jsonrpc", "result"])
async def test_calls_are_answered_as_the_sdk_answers_them(bus: Bus, echo_app: None, tmp_path: Path, style: str) -> None:
    found: dict[bool, list[Any]] = {}
    for fast in (True, False):
        log = tmp_path / f"{fast}.log"
        with gateway(bus, tmp_path / f"home-{fast}", log, errorStyle=style, fastHttp=fast) as url:
            async with raw(url) as session:
                found[fast] = [seen(await session.call(name, arguments)) for name, arguments in CALLS]
        assert log.read_text().count(TAKEN) == (len(CALLS) if fast else 0)
    assert found[True] == found[False]
    assert found[True][0][2]["result"]["content"][0]["text"] == CALLS[0][1]["args"]["text"]


async def chunked(body: bytes) -> AsyncIterator[bytes]:
    yield body


async def test_requests_the_sdk_refuses_are_refused_the_same_way(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    """Each of these reaches a session the fast path knows; each must get what the SDK gives it."""
    echo = {"name": "aai:exec", "arguments": {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "x"}}}
    found: dict[bool, list[Any]] = {}
    for fast in (True, False):
        log = tmp_path / f"{fast}.log"
        with gateway(bus, tmp_path / f"home-{fast}", log, fastHttp=fast) as url:
            async with raw(url) as session:

                def call() -> dict[str, Any]:
                    return session.request("tools/call", echo)

                answers = [
                    await session.post(call(), host="evil.example:80"),
                    await session.post(call(), origin="http://evil.example"),
                    await session.post(call(), **{"content-type": "text/plain"}),
                    await session.post(call(), **{"content-type": "application/jsonx"}),
                    await session.post(call(), accept="text/event-stream"),
                    await session.post(call(), **{"mcp-session-id": "not-a-session"}),
                    await session.post(call(), **{"mcp-protocol-version": "1999-01-01"}),
                    await session.post(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": '),
                    await session.post({**call(), "id": None}),
                    await session.post({"jsonrpc": "1.0", "id": 8, "method": "tools/call", "params": echo}),
                    await session.post({**call(), "params": {"name": "aai:exec", "arguments": "text"}}),
                    await session.post(b" " * (4 * 1024 * 1024 + 1)),
                    await session.client.post(
                        session.url,
                        content=chunked(json.dumps(call()).encode()),
                        headers={**JSON_HEADERS, "mcp-session-id": session.session},
                    ),
                    await session.post(call(), **{"mcp-protocol-version": ""}),
                ]
                ended = await session.client.delete(session.url, headers={"mcp-session-id": session.session})
                assert ended.status_code == 200
                answers.append(await session.post(call()))
                found[fast] = [seen(answer) for answer in answers]
        assert log.read_text().count(TAKEN) == (1 if fast else 0)  # only the last before DELETE
        assert "Traceback" not in log.read_text()
    assert found[True] == found[False]
    statuses = [status for status, _, _ in found[True]]
    assert statuses[:6] == [421, 403, 400, 415, 406, 404]
    assert statuses[-3:] == [200, 200, 404]  # chunked and version-less are served; after DELETE, gone


async def test_a_cancelled_call_is_answered_as_cancelled_and_recorded(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    slow = {"app": "dev.aai.echo", "tool": "slow", "args": {"seconds": 30}}
    found: dict[bool, list[Any]] = {}
    for fast in (True, False):
        home = tmp_path / f"home-{fast}"
        with gateway(bus, home, tmp_path / f"{fast}.log", fastHttp=fast) as url:
            async with raw(url) as session:
                call = session.request("tools/call", {"name": "aai:exec", "arguments": slow})
                before = bus.echo_calls()
                running = asyncio.ensure_future(session.post(call))
                await until_echo_called(bus, before)
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call["id"]}}
                told = await session.post(cancel)
                answer = await asyncio.wait_for(running, 20)
                after = await session.call("dev.aai.echo:echo", {"text": "next"})
                found[fast] = [seen(told), seen(answer), seen(after)]
        shown = subprocess.run(
            [gateway_command(), "history", "--json", "--tool", "slow"],
            env=env_of(bus, home),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert [(r["status"], r["error"]["type"]) for r in json.loads(shown.stdout)] == [("error", "CANCELLED")]
    assert found[True] == found[False]
    assert found[True][0][0] == 202
    assert found[True][1][2]["error"]["code"] == -32800


async def test_many_calls_at_once_on_one_session(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    with gateway(bus, tmp_path / "home", tmp_path / "stderr.log") as url:
        async with raw(url) as session:
            texts = [f"call {i}" for i in range(100)]
            answers = await asyncio.gather(*(session.call("dev.aai.echo:echo", {"text": t}) for t in texts))
    assert [a.json()["result"]["content"][0]["text"] for a in answers] == texts


async def test_consent_is_asked_on_the_session_stream(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    user = Consenter("once")
    log = tmp_path / "stderr.log"
    with gateway(bus, tmp_path / "home", log, rules=False) as url:
        async with http_session(url, consent=user) as session:
            for text in ("one", "two", "three"):
                arguments = {"app": "dev.aai.echo", "tool": "echo", "args": {"text": text}}
                assert text_of(await session.call_tool("aai:exec", arguments)) == text
    assert len(user.questions) == 3
    assert log.read_text().count(TAKEN) == 2  # the first call made the session known

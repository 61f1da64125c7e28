"""Remote and second clients over HTTP: `/mcp` behind a bearer token, with the official SDK client.

The installed gateway is started with `--web`; `mcpAuth: "always"` makes loopback require the token as
listening beyond loopback does, so every check runs here on 127.0.0.1. The token comes from
`aai-gateway token` (the file `~/.aai/mcp-token`) or from the environment (`mcpToken`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.mcp_client import text_of, web_gateway
from tests.support import Bus, echo_home, gateway_command

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CALLER = "remote-tests"
PROTOCOL = "2025-06-18"
TAKEN = "answered in front of the SDK"
JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
ECHO = {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "from afar"}}
WRONG = "wrong-token-of-forty-characters-xxxxxxxx"
REALM = 'Bearer realm="aai-gateway"'
EVERYWHERE = "0.0.0.0"  # noqa: S104 - the gateway is started on the wildcard address on purpose


def env_of(bus: Bus, home: Path, **config: Any) -> dict[str, str]:
    echo_home(home, CALLER, **{"logLevel": "debug", "errorStyle": "result", **config})
    return bus.env(HOME=str(home), AAI_PLATFORM="linux")


def token_command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [gateway_command(), "token", *args], env=env, capture_output=True, text=True, timeout=60, check=True
    )


class Seen:
    """Every HTTP response the SDK client received, for what the SDK does not pass on (status, headers)."""

    def __init__(self) -> None:
        self.responses: list[httpx2.Response] = []

    async def __call__(self, response: httpx2.Response) -> None:
        await response.aread()
        self.responses.append(response)


@asynccontextmanager
async def sdk_session(url: str, token: str | None, seen: Seen | None = None) -> AsyncIterator[ClientSession]:
    """The SDK client with `Authorization: Bearer <token>` on every request (none when `token` is None)."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    hooks: dict[str, list[Callable[..., Any]]] = {"response": [seen]} if seen is not None else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300), event_hooks=hooks) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write, client_info=types.Implementation(name=CALLER, version="1")) as session,
    ):
        await session.initialize()
        yield session


async def refused(url: str, token: str | None) -> httpx2.Response:
    """The answer to the SDK client's `initialize` when the gateway refuses it (the client raises MCPError)."""
    seen = Seen()
    with pytest.RaisesGroup(MCPError, flatten_subgroups=True):
        async with sdk_session(url, token, seen):
            pass
    [answer] = seen.responses
    return answer


class Raw:
    """Plain JSON-RPC POSTs of one session, each with the Authorization header given (or none)."""

    def __init__(self, client: httpx2.AsyncClient, url: str, token: str) -> None:
        self.client = client
        self.url = url
        self.token = token
        self.session = ""
        self.next_id = 0

    async def post(self, body: dict[str, Any], authorization: str | None) -> httpx2.Response:
        headers = {**JSON_HEADERS, "mcp-protocol-version": PROTOCOL}
        if self.session:
            headers["mcp-session-id"] = self.session
        if authorization is not None:
            headers["authorization"] = authorization
        return await self.client.post(self.url, content=json.dumps(body).encode(), headers=headers)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    async def call(self, authorization: str | None) -> httpx2.Response:
        return await self.post(self.request("tools/call", {"name": "aai_exec", "arguments": ECHO}), authorization)


@asynccontextmanager
async def raw_session(url: str, token: str) -> AsyncIterator[Raw]:
    """A session set up with the right token, known to the fast path (one request of it served by the SDK)."""
    async with httpx2.AsyncClient(timeout=60) as client:
        raw = Raw(client, url, token)
        right = f"Bearer {token}"
        hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": CALLER, "version": "1"}}
        opened = await raw.post(raw.request("initialize", hello), right)
        assert opened.status_code == 200, opened.text
        raw.session = opened.headers["mcp-session-id"]
        assert (await raw.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, right)).status_code == 202
        assert (await raw.post(raw.request("tools/list", {}), right)).status_code == 200
        yield raw


def refusal(response: httpx2.Response) -> tuple[int, str, str]:
    """Status, WWW-Authenticate and the body's error code of a refused request."""
    assert response.headers["content-type"] == "application/json"
    return response.status_code, response.headers.get("www-authenticate", ""), response.json()["error"]


def assert_token_nowhere(token: str, home: Path, stderr: Path) -> None:
    """The token is in its own file and nowhere else: not on stderr, in the logs or in the history."""
    assert token not in stderr.read_text()
    kept = [p for p in (home / ".aai").rglob("*") if p.is_file() and p.name != "mcp-token"]
    assert any(p.name.startswith("history.db") for p in kept)
    assert any(p.suffix == ".log" for p in kept)
    for path in kept:
        assert token.encode() not in path.read_bytes(), path


@contextmanager
def guarded(bus: Bus, home: Path, stderr: Path, **config: Any) -> Iterator[tuple[str, str, dict[str, str]]]:
    """A gateway on loopback requiring the token of `aai-gateway token`: its URL, the token and the env."""
    env = env_of(bus, home, mcpAuth="always", **config)
    token = token_command(env).stdout.strip()
    with web_gateway(env, stderr) as url:
        yield url, token, env


@pytest.mark.parametrize("fast", [True, False])
async def test_the_sdk_client_needs_the_right_token(bus: Bus, echo_app: None, tmp_path: Path, fast: bool) -> None:
    home, stderr = tmp_path / "home", tmp_path / "stderr.log"
    with guarded(bus, home, stderr, fastHttp=fast) as (url, token, _):
        assert f"/mcp requires Authorization: Bearer <token>; the token is in {home / '.aai' / 'mcp-token'}" in (
            stderr.read_text()
        )
        for sent, challenge, error in [
            (None, REALM, "unauthorized"),
            (WRONG, f'{REALM}, error="invalid_token"', "invalid_token"),
        ]:
            status, www, code = refusal(await refused(url, sent))
            assert (status, code) == (401, error)
            assert www.startswith(challenge)

        async with sdk_session(url, token) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert "aai_exec" in names or "aai:exec" in names
            for text in ("one", "two"):
                assert text_of(await session.call_tool("aai_exec", {**ECHO, "args": {"text": text}})) == text
    assert_token_nowhere(token, home, stderr)


@pytest.mark.parametrize("fast", [True, False])
async def test_every_request_of_an_established_session_needs_the_token(
    bus: Bus, echo_app: None, tmp_path: Path, fast: bool
) -> None:
    """Calls the fast path would answer are refused like any other request once the token is missing or wrong."""
    home, stderr = tmp_path / "home", tmp_path / "stderr.log"
    with guarded(bus, home, stderr, fastHttp=fast) as (url, token, _):
        async with raw_session(url, token) as raw:
            right = f"Bearer {token}"
            refused = [
                await raw.call(None),
                await raw.call(f"Bearer {WRONG}"),
                await raw.call(f"Basic {token}"),
                await raw.call(f"Bearer {token}x"),
                await raw.call("Bearer"),
            ]
            assert [refusal(r)[::2] for r in refused] == [
                (401, "unauthorized"),
                (401, "invalid_token"),
                (401, "unauthorized"),
                (401, "invalid_token"),
                (401, "unauthorized"),
            ]
            answered = await raw.call(right)
            assert answered.status_code == 200
            assert answered.json()["result"]["content"][0]["text"] == "from afar"
            lowercase = await raw.call(f"bearer {token}")  # the scheme is case-insensitive (RFC 7235)
            assert lowercase.status_code == 200

            session = {"mcp-session-id": raw.session}
            stream = await raw.client.get(url, headers={**session, "accept": "text/event-stream"})
            ended = await raw.client.delete(url, headers=session)
            assert [refusal(r)[::2] for r in (stream, ended)] == [(401, "unauthorized")] * 2
            assert (await raw.call(right)).status_code == 200, "a refused DELETE ends nothing"
    log = stderr.read_text()
    assert log.count(TAKEN) == (3 if fast else 0)
    assert log.count("refused POST /mcp") == 5
    assert_token_nowhere(token, home, stderr)


@pytest.mark.parametrize("mode", ["always", "remote"])
async def test_a_token_in_the_query_string_is_refused(bus: Bus, echo_app: None, tmp_path: Path, mode: str) -> None:
    """Whether or not a token is required, one in the URL is never taken, even beside the right header."""
    env = env_of(bus, tmp_path / "home", mcpAuth=mode)
    token = token_command(env).stdout.strip()
    with web_gateway(env, tmp_path / "stderr.log") as url:
        async with httpx2.AsyncClient(timeout=60) as client:
            hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": CALLER, "version": "1"}}
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}).encode()
            headers = {**JSON_HEADERS, "authorization": f"Bearer {token}"}
            for query in ("access_token", "token", "Access_Token"):
                answer = await client.post(f"{url}?{query}={token}", content=body, headers=headers)
                status, www, error = refusal(answer)
                assert (status, error) == (400, "invalid_request")
                assert www.startswith(f'{REALM}, error="invalid_request"')
                assert "Authorization" in answer.json()["error_description"]
            assert (await client.post(f"{url}?other=1", content=body, headers=headers)).status_code == 200
            if mode == "remote":  # on loopback, no token is needed
                assert (await client.post(url, content=body, headers=JSON_HEADERS)).status_code == 200
            base = url.removesuffix("/mcp")
            for published in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
                assert (await client.get(base + published)).status_code == 404


async def test_a_rotated_token_is_used_without_a_restart(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    home, stderr = tmp_path / "home", tmp_path / "stderr.log"
    with guarded(bus, home, stderr) as (url, old, env):
        async with sdk_session(url, old) as session:
            assert text_of(await session.call_tool("aai_exec", ECHO)) == "from afar"
            rotated = token_command(env, "--rotate")
            new = rotated.stdout.strip()
            assert new != old
            assert "running gateways use it from their next request" in rotated.stderr
            assert token_command(env).stdout.strip() == new
            with pytest.raises(MCPError):  # the old token no longer works, even in a session it opened
                await session.call_tool("aai_exec", ECHO)
        async with sdk_session(url, new) as session:
            assert text_of(await session.call_tool("aai_exec", ECHO)) == "from afar"
        (home / ".aai" / "mcp-token").unlink()  # no file, no way in
        assert refusal(await refused(url, new))[::2] == (401, "invalid_token")
    assert "mcp-token does not exist" in stderr.read_text()
    assert_token_nowhere(new, home, stderr)


def start(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [gateway_command(), "--web", "--port", "0", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_beyond_loopback_without_a_token_the_gateway_does_not_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    echo_home(home, None)
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    for args in (("--host", EVERYWHERE), ("--host", "::")):
        done = start(env, *args)
        assert done.returncode == 2
        assert "MCP over HTTP at" not in done.stderr
        assert f"/mcp needs a bearer token because {args[1]} is not a loopback address" in done.stderr
        assert f"run `aai-gateway token` to create one in {home / '.aai' / 'mcp-token'}" in done.stderr
        assert '"mcpToken": {"$env": "VARIABLE"}' in done.stderr
    (home / ".aai" / "config.json").write_text(json.dumps({"mcpToken": {"$env": "AAI_MCP_TOKEN"}}))
    unset = start(env, "--host", EVERYWHERE)
    assert unset.returncode == 2
    assert "mcpToken names environment variable AAI_MCP_TOKEN, which is not set" in unset.stderr
    short = start({**env, "AAI_MCP_TOKEN": "short"}, "--host", EVERYWHERE)
    assert short.returncode == 2
    assert "environment variable AAI_MCP_TOKEN (mcpToken) is shorter than 16 characters" in short.stderr
    assert "short" not in short.stderr.replace("shorter", "")


async def test_beyond_loopback_with_a_token_from_the_environment(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    home, stderr = tmp_path / "home", tmp_path / "stderr.log"
    token = "env-token-0123456789abcdefghij"
    env = {**env_of(bus, home, mcpToken={"$env": "AAI_MCP_TOKEN"}), "AAI_MCP_TOKEN": token}
    with web_gateway(env, stderr, "--host", EVERYWHERE) as url:
        assert url.startswith("http://0.0.0.0:")
        assert "the token is the value of environment variable AAI_MCP_TOKEN" in stderr.read_text()
        local = url.replace(EVERYWHERE, "127.0.0.1")
        assert refusal(await refused(local, None))[:2] == (401, REALM)
        async with sdk_session(local, token) as session:
            assert text_of(await session.call_tool("aai_exec", ECHO)) == "from afar"
        # A remote client names the gateway by an address of this machine (here a documentation address in
        # Host): with the token it is served, however it names the gateway; without it, refused.
        port = local.rsplit(":", 1)[1].split("/")[0]
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}", "Host": f"192.0.2.10:{port}"}) as client,
            streamable_http_client(local, http_client=client) as (read, write),
            ClientSession(read, write, client_info=types.Implementation(name=CALLER, version="1")) as session,
        ):
            await session.initialize()
            assert text_of(await session.call_tool("aai_exec", ECHO)) == "from afar"
        async with httpx2.AsyncClient(headers={"Host": f"192.0.2.10:{port}"}) as client:
            assert (await client.post(local, json={})).status_code == 401
    assert_token_nowhere(token, home, stderr)


def test_on_loopback_the_start_says_no_token_is_taken(tmp_path: Path) -> None:
    """The default, mcpAuth "remote", on 127.0.0.1: the gateway says so; existing clients keep working."""
    home = tmp_path / "home"
    echo_home(home, None)
    stderr = tmp_path / "stderr.log"
    with web_gateway({"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}, stderr):
        assert '/mcp takes no token (127.0.0.1 is a loopback address; "mcpAuth": "always" requires one)' in (
            stderr.read_text()
        )

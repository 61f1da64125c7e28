"""An MCP server's secrets (`{"$env": NAME}` and `{"$keyring": KEY}` values of its env and headers) never
reach the agent, the history or the log, whatever the server does with them: print them on stderr as it
crashes, answer with them, describe its tools with them, or echo them in an HTTP error.

Each secret holds `+ / = % " \\`, so that its percent-encoded, JSON-escaped and base64 forms differ from it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from html import unescape
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.session import ClientRequestContext

from aai_gateway.auth.secrets import open_store
from aai_gateway.config import load_settings
from aai_gateway.service import Caller
from aai_gateway.web import UI_PATH
from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.mcpservers.servers import descriptor, hostile, install
from tests.mcpservers.test_mcp_apps import exec_
from tests.support import committed_calls, gateway_command, served, wait_until
from tests.web.ui_support import make_ui

pytestmark = pytest.mark.anyio

ENV_KEY = 'sk-env+A1/b2=c3%d4"e5\\f6'
STORE_KEY = "sk-store+G7/h8=i9%j0"
STORE_NAME = "mcp.hostile|TOKEN"
MASK = "[redacted]"


def leaked(text: str, *secrets: str) -> list[str]:
    """The forms of `secrets` found in `text`: as given, percent-encoded, JSON-escaped, as repr shows it, base64."""
    found = []
    for secret in secrets:
        forms = {
            "as given": secret,
            "quote": quote(secret, safe=""),
            "quote_plus": quote_plus(secret),
            "JSON": json.dumps(secret)[1:-1],
            "repr (in a traceback)": repr(secret)[1:-1],
            "base64": base64.b64encode(secret.encode()).decode(),
        }
        found += [f"{secret!r} {how}" for how, form in forms.items() if form in text]
    return found


@pytest.fixture
def at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    return Home(tmp_path, monkeypatch)


class Home:
    """An AAI home whose store holds STORE_KEY, and the environment that gives the gateway ENV_KEY."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.home = tmp_path / "home"
        self.aai = self.home / ".aai"
        self.stderr = tmp_path / "gateway-stderr.log"
        self.env = {
            "HOME": str(self.home),
            "PATH": os.environ["PATH"],
            "AAI_PLATFORM": "linux",
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path / 'no-bus'}",  # the store is the file, then
            "AAI_TEST_API_KEY": ENV_KEY,
        }

    def install(self, *docs: dict[str, Any]) -> None:
        install(self.aai, *docs, config={"consent": {"default": "allow"}, "logLevel": "debug"})
        settings = load_settings({"HOME": str(self.home), "AAI_PLATFORM": "linux"})
        self.monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", self.env["DBUS_SESSION_BUS_ADDRESS"])
        open_store(settings, probe_timeout=2).set(STORE_NAME, STORE_KEY)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[ClientSession]:
        async with stdio_session(self.env, self.stderr) as session:
            yield session

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [gateway_command(), *args], env=self.env, capture_output=True, text=True, timeout=60, check=False
        )

    def cli(self, *args: str) -> str:
        out = self.run(*args)
        assert out.returncode == 0, out.stderr
        return out.stdout + out.stderr

    def written(self) -> str:
        """Everything the gateway wrote down: its log files, its stderr, its history (the file and the CLI)."""
        logs = [p.read_text(errors="replace") for p in (self.aai / "logs").glob("gateway.log*")]
        files = [p for p in self.aai.glob("history.*") if p.is_file()] + list(self.aai.glob("history.journal.d/*"))
        stored = b"".join(p.read_bytes() for p in files).decode(errors="replace")
        records = json.loads(self.cli("history", "--json"))
        shown = [self.cli("history", "show", record["id"]) for record in records]
        return "\n".join([*logs, self.stderr.read_text(errors="replace"), stored, json.dumps(records), *shown])

    def history(self) -> list[dict[str, Any]]:
        return committed_calls(self.aai / "history.db")  # the journal too


SECRET_ENV = {"API_KEY": {"$env": "AAI_TEST_API_KEY"}, "TOKEN": {"$keyring": STORE_NAME}}


def secret_server(tmp_path: Path, plan: dict[str, Any]) -> dict[str, Any]:
    execution = hostile(tmp_path / "plan.json", plan)
    execution["env"].update(SECRET_ENV)
    return descriptor("mcp.hostile", execution)


@pytest.mark.hostile("mcp-server")
async def test_a_crash_that_prints_the_secrets_on_stderr(tmp_path: Path, at: Home) -> None:
    crash = [
        {"stderr": f"using key {quote(ENV_KEY, safe='')} and token {base64.b64encode(STORE_KEY.encode()).decode()}"},
        {"stderr": f"401 Unauthorized for key {ENV_KEY} (token {STORE_KEY})"},
        {"exit": 3},
    ]
    at.install(secret_server(tmp_path, {"calls": {"echo": crash}}))
    async with at.session() as session:
        error = await error_of(session, "aai_exec", {"app": "mcp.hostile", "tool": "echo", "args": {}})
    assert error.data["type"] == "APP_NOT_RUNNING"
    assert f"it said: 401 Unauthorized for key {MASK} (token {MASK})" in error.data["detail"]
    assert leaked(json.dumps(error.model_dump()), ENV_KEY, STORE_KEY) == []
    (record,) = at.history()
    assert MASK in record["error_detail"]
    written = at.written()
    assert "using key [redacted] and token [redacted]" in written  # the debug log of the server's stderr
    assert leaked(written, ENV_KEY, STORE_KEY) == []


@pytest.mark.hostile("mcp-server")
async def test_a_secret_on_stderr_in_two_writes(tmp_path: Path, at: Home) -> None:
    half = len(ENV_KEY) // 2
    crash = [
        {"stderr": f"key {ENV_KEY[:half]}", "end": ""},
        {"sleep": 0.3},  # the gateway reads the first half alone (or both at once: then it proves less)
        {"stderr": f"{ENV_KEY[half:]} refused"},
        {"exit": 3},
    ]
    at.install(secret_server(tmp_path, {"calls": {"echo": crash}}))
    async with at.session() as session:
        error = await error_of(session, "aai_exec", {"app": "mcp.hostile", "tool": "echo", "args": {}})
    assert f"it said: key {MASK} refused" in error.data["detail"]
    logged = "\n".join(p.read_text() for p in (at.aai / "logs").glob("gateway.log*"))
    assert f"key {MASK} refused" in logged
    for piece in (ENV_KEY[:half], ENV_KEY[half:]):
        assert piece not in logged


@pytest.mark.hostile("mcp-server")
async def test_results_and_tool_lists_that_carry_the_secrets(tmp_path: Path, at: Home) -> None:
    tools = [
        {"name": name, "description": f"uses {ENV_KEY}", "inputSchema": {"type": "object"}}
        for name in ("key", "token", "echo", "both")
    ]
    both = {"content": [{"type": "text", "text": f"key={quote_plus(ENV_KEY)}"}], "structuredContent": {STORE_KEY: 1}}
    plan = {
        "tools": tools,
        "calls": {"key": [{"env": "API_KEY"}], "token": [{"env": "TOKEN"}], "both": [{"reply": both}]},
    }
    at.install(secret_server(tmp_path, plan))
    async with at.session() as session:
        said = [text_of(await exec_(session, "mcp.hostile", tool)) for tool in ("key", "token")]
        assert said == [MASK, MASK]
        answer = await exec_(session, "mcp.hostile", "both")
        replied = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        assert replied["content"] == [{"type": "text", "text": f"key={MASK}"}]
        assert replied["structuredContent"] == {MASK: 1}
        guide = text_of(await session.call_tool("app_mcp_hostile", {}))
        assert f"uses {MASK}" in guide
        seen = json.dumps([said, guide, replied])
    assert leaked(seen, ENV_KEY, STORE_KEY) == []
    records = at.history()
    kept = [json.loads(record["result"])["content"] for record in records[:2]]
    assert kept == [[{"type": "text", "text": MASK}]] * 2
    assert leaked(at.written(), ENV_KEY, STORE_KEY) == []


@pytest.mark.hostile("mcp-server")
async def test_a_question_that_quotes_the_secret(tmp_path: Path, at: Home) -> None:
    tools = [{"name": "ask", "inputSchema": {"type": "object"}}]
    at.install(secret_server(tmp_path, {"tools": tools, "calls": {"ask": [{"ask": f"May I send {STORE_KEY}?"}]}}))
    asked: list[str] = []

    async def user(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with stdio_session(at.env, at.stderr, consent=user) as session:
        answered = await exec_(session, "mcp.hostile", "ask")
    assert asked == [f"May I send {MASK}?"]
    assert json.loads(text_of(answered))["content"] == {"name": "Ada"}  # the answer reached the server
    assert leaked(at.written(), ENV_KEY, STORE_KEY) == []


@pytest.mark.hostile("mcp-server")
def test_the_call_command_prints_no_secret(tmp_path: Path, at: Home) -> None:
    crash = [{"stderr": f"401 Unauthorized for key {ENV_KEY}"}, {"exit": 3}]
    tools = [{"name": name, "inputSchema": {"type": "object"}} for name in ("token", "crash")]
    at.install(secret_server(tmp_path, {"tools": tools, "calls": {"token": [{"env": "TOKEN"}], "crash": crash}}))
    out = at.run("call", "mcp.hostile", "token")
    assert out.returncode == 0, out.stderr
    assert MASK in out.stdout
    failed = at.run("call", "mcp.hostile", "crash")
    assert failed.returncode == 1
    assert f"401 Unauthorized for key {MASK}" in failed.stderr
    assert leaked(out.stdout + out.stderr + failed.stdout + failed.stderr, ENV_KEY, STORE_KEY) == []


@pytest.mark.hostile("mcp-server")
def test_the_ui_shows_a_crash_without_the_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAI_TEST_API_KEY", ENV_KEY)
    plan = {"calls": {"echo": [{"stderr": f"401 Unauthorized for key {ENV_KEY}"}, {"exit": 3}]}}
    execution = hostile(tmp_path / "plan.json", plan, API_KEY={"$env": "AAI_TEST_API_KEY"})
    with contextlib.contextmanager(make_ui)(tmp_path / "ui") as ui:
        install(ui.gateway.settings.scan_paths[0], descriptor("mcp.hostile", execution), config={})
        assert "mcp.hostile" in ui.gateway.rescan()
        ui.login()
        assert ui.client.get(f"{UI_PATH}/apps/mcp.hostile").status_code == 200  # starts the server
        assert ui.client.portal is not None
        with contextlib.suppress(Exception):
            ui.client.portal.call(ui.gateway.call, "mcp.hostile", "echo", {}, Caller(name="cli", transport="cli"))

        def crash_shown() -> bool:
            return f"401 Unauthorized for key {MASK}" in unescape(ui.client.get(f"{UI_PATH}/apps").text)

        wait_until(crash_shown, 10, "the crash on the Apps page")
        assert leaked(ui.client.get(f"{UI_PATH}/apps").text, ENV_KEY) == []
        ui.client.portal.call(ui.gateway.aclose)


class _Echoing(BaseHTTPRequestHandler):
    """An HTTP MCP server that refuses every request, quoting the Authorization header it was sent."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        said = f"401 Unauthorized: {self.headers.get('Authorization')} is not a key we know"
        if self.path == "/mcp/not-json-rpc":  # the SDK logs the body it cannot read, with a traceback
            answer: dict[str, Any] = {"key": self.headers.get("Authorization")}
            status = 200
        else:
            answer = {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": -32001, "message": said}}
            status = 401
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.hostile("mcp-server")
@pytest.mark.parametrize("path", ["", "/not-json-rpc"])
async def test_an_http_server_that_quotes_its_authorization_header(at: Home, path: str) -> None:
    with served(_Echoing) as base:
        url = f"{base}/mcp"
        headers = {"Authorization": {"$env": "AAI_TEST_API_KEY"}, "X-Token": {"$keyring": STORE_NAME}}
        at.install(descriptor("mcp.hostile", {"type": "mcp", "url": url + path, "headers": headers}))
        async with at.session() as session:
            error = await error_of(session, "aai_exec", {"app": "mcp.hostile", "tool": "echo", "args": {}})
    assert error.data["type"] == "APP_NOT_RUNNING"
    if not path:
        assert f"401 Unauthorized: {MASK} is not a key we know" in error.data["detail"]
    assert leaked(json.dumps(error.model_dump()), ENV_KEY, STORE_KEY) == []
    assert leaked(at.written(), ENV_KEY, STORE_KEY) == []

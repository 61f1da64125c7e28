"""Web REST for real: SDK client → installed `aai-gateway --mcp` → a real HTTP API on 127.0.0.1.

The API is tests/apps/rest_server.py; the descriptors are tests/apps/dev.aai.rest (shape A) and
tests/apps/dev.aai.tasks (shape C), written into each test's HOME with the server's real port and,
where a test needs one, an auth section.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession

from aai_gateway.config import Settings
from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.descriptor.validate import check_bytes
from aai_gateway.errors import AuthExpired, AuthRequired
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.http import HttpExecutor
from aai_gateway.executors.http_auth import OAUTH_MODULE
from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.support import TEST_APPS, read_line, stop

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SHAPE_A = TEST_APPS / "dev.aai.rest" / "aai.json"
SHAPE_C = TEST_APPS / "dev.aai.tasks" / "aai.json"
API_KEY = f"api-key-{uuid.uuid4().hex}"
BEARER = f"bearer-{uuid.uuid4().hex}"
WRONG_KEY = f"wrong-key-{uuid.uuid4().hex}"
CAP = 64 * 1024


@dataclass
class RestServer:
    url: str
    proc: subprocess.Popen[str]

    def seen(self) -> list[str]:
        paths: list[str] = httpx2.get(f"{self.url}/v1/seen").json()
        return paths


@pytest.fixture
def rest_server() -> Iterator[RestServer]:
    env = {**os.environ, "REST_API_KEY": API_KEY, "REST_BEARER_TOKEN": BEARER}
    proc = subprocess.Popen(
        [sys.executable, str(TEST_APPS / "rest_server.py")], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        line = read_line(proc, 15)
        assert line.startswith("ready http://127.0.0.1:"), f"rest_server.py printed {line!r}"
        yield RestServer(line.removeprefix("ready "), proc)
    finally:
        stop(proc)


@dataclass
class Home:
    path: Path
    server: RestServer
    config: dict[str, Any] = field(
        default_factory=lambda: {"web": {"allowHttpLoopback": True, "maxResponseBytes": CAP}}
    )

    @property
    def aai(self) -> Path:
        return self.path / ".aai"

    def install(
        self, source: Path, app_id: str | None = None, auth: Mapping[str, Any] | None = None, base: str | None = None
    ) -> str:
        """Write `source` with the server's base URL (and `auth`) as `<app_id>/aai.json`; return the id."""
        doc = json.loads(source.read_text())
        base = base or f"{self.server.url}/v1"
        if "platforms" in doc:
            app_id = app_id or doc["appId"]
            doc["appId"] = app_id
            doc["platforms"]["web"]["base_url"] = base
            if auth is not None:
                doc["platforms"]["web"]["auth"] = dict(auth)
        else:
            app_id = app_id or doc["app"]["id"]
            doc["app"]["id"] = app_id
            doc["execution"]["baseUrl"] = base
            if auth is not None:
                doc["auth"] = dict(auth)
        target = self.aai / app_id / "aai.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(doc, ensure_ascii=False, indent=2))
        return app_id

    def env(self, **extra: str) -> dict[str, str]:
        (self.aai / "config.json").write_text(json.dumps(self.config))
        return {"HOME": str(self.path), "AAI_PLATFORM": "linux", **extra}

    def written(self) -> str:
        """Everything the gateway wrote besides its replies: stderr and its log file."""
        log = self.aai / "logs" / "gateway.log"
        return (self.path / "stderr.log").read_text() + (log.read_text() if log.exists() else "")


@pytest.fixture
def home(tmp_path: Path, rest_server: RestServer) -> Home:
    return Home(tmp_path / "home", rest_server)


@asynccontextmanager
async def gateway(home: Home, **env: str) -> AsyncIterator[ClientSession]:
    async with stdio_session(home.env(**env), home.path / "stderr.log") as session:
        yield session


async def run(session: ClientSession, app: str, tool: str, **args: Any) -> Any:
    """One aai:exec call; its text parsed as JSON when it is JSON."""
    text = text_of(await session.call_tool("aai_exec", {"app": app, "tool": tool, "args": args}))
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def fail(session: ClientSession, app: str, tool: str, **args: Any) -> tuple[int, str, str]:
    error = await error_of(session, "aai_exec", {"app": app, "tool": tool, "args": args})
    assert isinstance(error.data, dict)
    return error.code, error.data["type"], error.data["detail"]


async def test_tasks_crud_in_shape_a(home: Home) -> None:
    app = home.install(SHAPE_A)
    async with gateway(home) as session:
        assert await run(session, app, "list_tasks") == {"tasks": []}
        created = await run(session, app, "create_task", title="Groceries", tags=["home", "今天"], priority=2)
        assert created == {"id": "t1", "title": "Groceries", "tags": ["home", "今天"], "priority": 2, "done": False}
        untagged = await run(session, app, "create_task", title="Call Bob")
        assert untagged == {"id": "t2", "title": "Call Bob", "tags": [], "done": False}
        assert await run(session, app, "get_task", id="t1") == created
        updated = await run(session, app, "update_task", id="t1", done=True)
        assert updated == {**created, "done": True}
        assert await run(session, app, "list_tasks", tag="今天") == {"tasks": [updated]}
        assert await run(session, app, "list_tasks", limit=1) == {"tasks": [updated]}
        assert await run(session, app, "delete_task", id="t1") is None
        code, kind, detail = await fail(session, app, "get_task", id="t1")
        assert (code, kind) == (-32013, "API_REQUEST_FAILED")
        assert detail == 'GET /v1/tasks/t1 answered 404 Not Found: {"error":"no task t1"}'


async def test_tasks_crud_in_shape_c(home: Home) -> None:
    app = home.install(SHAPE_C)
    async with gateway(home) as session:
        created = await run(session, app, "createTask", title="Read", tags=["books"], priority=1)
        assert created == {"id": "t1", "title": "Read", "tags": ["books"], "priority": 1, "done": False}
        await run(session, app, "createTask", title="Write")
        assert await run(session, app, "listTasks", tag="books") == {"tasks": [created]}
        assert len((await run(session, app, "listTasks", limit=5))["tasks"]) == 2
        assert await run(session, app, "updateTask", id="t1", title="Reread") == {**created, "title": "Reread"}
        assert await run(session, app, "deleteTask", id="t2") is None
        assert [t["id"] for t in (await run(session, app, "listTasks"))["tasks"]] == ["t1"]
        code, _, detail = await fail(session, app, "getTask", id="t2")
        assert code == -32013
        assert "404" in detail


async def test_requests_arrive_exactly_as_described(home: Home) -> None:
    a, c = home.install(SHAPE_A), home.install(SHAPE_C)
    async with gateway(home) as session:
        echoed = await run(session, a, "echo", segment="提醒 a/b?x=1#", q="a&b=c d", note="n ✓", value=[1, {"k": None}])
        assert echoed["method"] == "POST"
        assert echoed["raw_path"] == "/v1/echo/%E6%8F%90%E9%86%92%20a%2Fb%3Fx%3D1%23"
        assert echoed["query"] == "fixed=yes&q=a%26b%3Dc%20d&count=7"
        assert echoed["body"] == {
            "value": [1, {"k": None}],
            "label": 'value is [1, {"k": null}]',
            "constant": [1, True, None],
        }
        headers = echoed["headers"]
        assert headers["x-note"] == "n ✓"
        assert (headers["accept"], headers["x-client"]) == ("application/json", "aai-tests")
        assert headers["content-type"] == "application/json"
        assert headers["user-agent"].startswith("aai-gateway/")
        assert "cookie" not in headers
        assert "authorization" not in headers

        bare = await run(session, a, "echo", segment="s")
        assert bare["query"] == "fixed=yes&count=7"
        assert "x-note" not in bare["headers"]
        assert bare["body"] == {"constant": [1, True, None]}

        text = text_of(await session.call_tool("aai_exec", {"app": a, "tool": "echo_text", "args": {}}))
        assert text.startswith('{"method":"GET","path":"/v1/echo"')

        got = await run(session, c, "echoGet", segment="x y", trace="t-1", tags=["a", "b"], flag=True)
        assert (got["method"], got["raw_path"], got["query"]) == ("GET", "/v1/echo/x%20y", "tags=a&tags=b&flag=true")
        assert got["headers"]["x-trace"] == "t-1"
        assert got["body"] is None
        posted = await run(session, c, "echoPost", a="é", b=3, extra={"n": [1, 2]}, flag=False)
        assert (posted["method"], posted["raw_path"], posted["query"]) == ("POST", "/v1/echo/%C3%A9/3", "")
        assert posted["body"] == {"extra": {"n": [1, 2]}, "flag": False}


async def test_hostile_values_stay_inside_the_api(home: Home, rest_server: RestServer) -> None:
    a, c = home.install(SHAPE_A), home.install(SHAPE_C)
    async with gateway(home) as session:
        for value in ["..", "../secret", "../../secret", "%2e%2e", "%2E%2E%2Fsecret", "..%2F..%2Fsecret", "a/../../x"]:
            for app, tool in ((a, "get_task"), (c, "getTask")):
                code, kind, detail = await fail(session, app, tool, id=value)
                assert (code, kind) == (-32005, "INVALID_PARAMS"), detail
                assert "argument 'id' goes into the URL path" in detail
        code, _, detail = await fail(session, a, "get_task", id="a/b?x=1#")
        assert code == -32013
        assert detail.startswith("GET /v1/tasks/a%2Fb%3Fx%3D1%23 answered 404")
        code, kind, detail = await fail(session, a, "echo", segment="s", note="x\r\nX-Injected: 1")
        assert (code, kind) == (-32005, "INVALID_PARAMS")
        assert "header X-Note" in detail
        for value in ["../", "%2e%2e/", "?x=1#", "$(id)", "提醒事项\n", "'; --"]:
            echoed = await run(session, a, "echo", segment="s", q=value, value=value)
            assert echoed["raw_path"] == "/v1/echo/s"
            assert echoed["body"]["value"] == value
    seen = rest_server.seen()
    assert seen
    assert all(path.startswith("/v1/") for path in seen), seen
    assert "/v1/tasks/a%2Fb%3Fx%3D1%23" in seen


async def test_statuses_map_to_error_codes(home: Home, rest_server: RestServer) -> None:
    app = home.install(SHAPE_A)
    async with gateway(home) as session:
        code, kind, detail = await fail(session, app, "status", code=403)
        assert (code, kind) == (-32004, "PERMISSION_DENIED")
        assert detail.startswith("GET /v1/status/403 answered 403 Forbidden: status 403 from the test API")

        code, kind, detail = await fail(session, app, "status", code=404)
        assert (code, kind) == (-32013, "API_REQUEST_FAILED")
        assert "answered 404 Not Found" in detail

        code, kind, detail = await fail(session, app, "status", code=500)
        assert (code, kind) == (-32013, "API_REQUEST_FAILED")
        assert detail.startswith("GET /v1/status/500 answered 500 Internal Server Error: status 500 from the test API")
        assert detail.endswith("…")
        assert len(detail) < 400

        assert await run(session, app, "status", code=429, key="get-now", after="0") == {"status": 200, "attempts": 2}
        assert await run(session, app, "status", code=429, key="get-1s") == {"status": 200, "attempts": 2}
        assert await run(session, app, "status", code=503, key="get-503", after="0") == {"status": 200, "attempts": 2}

        code, _, detail = await fail(session, app, "status", code=429, key="too-late", after="120")
        assert code == -32013
        assert detail.endswith("(retry after 120 s)")

        code, _, detail = await fail(session, app, "status_post", code=429, key="post", after="0")
        assert code == -32013
        assert "429 Too Many Requests" in detail
        code, _, detail = await fail(session, app, "status_post", code=503, key="post", after="0")
        assert code == -32013
        assert "503 Service Unavailable" in detail
    assert rest_server.seen().count("/v1/status/429") == 2 + 2 + 1 + 1


async def test_timeouts_and_no_repeat_after_one(home: Home, rest_server: RestServer) -> None:
    app = home.install(SHAPE_A)
    async with gateway(home) as session:
        code, kind, detail = await fail(session, app, "slow", seconds=5)
        assert (code, kind) == (-32008, "TIMEOUT")
        assert detail == "dev.aai.rest did not answer GET /v1/slow within 1 s"
        code, kind, _ = await fail(session, app, "slow_post", seconds=5)
        assert (code, kind) == (-32008, "TIMEOUT")
        assert await run(session, app, "slow", seconds=0) == {"slept": True}
    assert rest_server.seen().count("/v1/slow") == 3


async def test_redirects_are_followed_only_within_the_api(home: Home, rest_server: RestServer) -> None:
    app = home.install(SHAPE_A)
    async with gateway(home) as session:
        code, kind, detail = await fail(session, app, "redirect", where="away")
        assert (code, kind) == (-32013, "API_REQUEST_FAILED")
        assert detail == (
            "GET /v1/redirect-away answered 302 redirecting to http://example.invalid/v1/echo, "
            f"outside {rest_server.url}/v1; only redirects within the API are followed"
        )
        code, _, detail = await fail(session, app, "redirect", where="outside")
        assert code == -32013
        assert f"redirecting to {rest_server.url}/secret, outside" in detail
        inside = await run(session, app, "redirect", where="inside")
        assert (inside["method"], inside["path"], inside["query"]) == ("GET", "/v1/echo", "redirected=1")
    assert "/secret" not in rest_server.seen()


async def test_responses_over_the_cap_are_refused(home: Home) -> None:
    app = home.install(SHAPE_A)
    async with gateway(home) as session:
        assert len((await run(session, app, "big", bytes=1000))["data"]) == 1000
        assert len((await run(session, app, "big", bytes=1000, chunked=True))["data"]) == 1000
        for chunked in (False, True):
            code, kind, detail = await fail(session, app, "big", bytes=CAP * 4, chunked=chunked)
            assert (code, kind) == (-32013, "API_REQUEST_FAILED")
            assert detail == f"GET /v1/big answered with more than {CAP} bytes, the most a response may have " + (
                "(web.maxResponseBytes)"
            )


FAULT_TOOLS = [
    {
        "name": "drop",
        "description": "A response whose connection is closed part way through its body",
        "parameters": {"type": "object", "properties": {"length": {"type": "boolean"}}},
        "endpoint": "/drop",
        "method": "GET",
        "query_params": {"length": "${length}"},
    },
    {
        "name": "flood",
        "description": "A response of that many bytes, made as it is sent",
        "parameters": {"type": "object", "properties": {"bytes": {"type": "integer"}, "length": {"type": "boolean"}}},
        "endpoint": "/flood",
        "method": "GET",
        "query_params": {"bytes": "${bytes}", "length": "${length}"},
    },
]


def with_fault_tools(home: Home, app: str) -> str:
    """Add the tools for the fault endpoints to an installed shape-A descriptor."""
    target = home.aai / app / "aai.json"
    doc = json.loads(target.read_text())
    doc["platforms"]["web"]["tools"] += FAULT_TOOLS
    target.write_text(json.dumps(doc, ensure_ascii=False, indent=2))
    return app


async def test_dropped_connections_fail_the_call_and_the_gateway_keeps_serving(home: Home) -> None:
    app = with_fault_tools(home, home.install(SHAPE_A))
    async with gateway(home) as session:
        for length in (True, False):
            code, kind, detail = await fail(session, app, "drop", length=length)
            assert (code, kind) == (-32013, "API_REQUEST_FAILED")
            assert detail.startswith(f"GET /v1/drop could not reach {home.server.url}: "), detail
            if length:
                assert detail.endswith(
                    "peer closed connection without sending complete message body (received 10 bytes, expected 1000)"
                ), detail
            else:
                assert "peer closed connection without sending complete message body" in detail, detail
            assert await run(session, app, "slow", seconds=0) == {"slept": True}
        assert await run(session, app, "create_task", title="after the drops") == {
            "id": "t1",
            "title": "after the drops",
            "tags": [],
            "done": False,
        }


async def test_a_50_mb_response_is_refused_without_reading_it_all(home: Home) -> None:
    app = with_fault_tools(home, home.install(SHAPE_A))
    huge = 50 * 1024 * 1024
    async with gateway(home) as session:
        for length in (True, False):
            code, kind, detail = await fail(session, app, "flood", bytes=huge, length=length)
            assert (code, kind) == (-32013, "API_REQUEST_FAILED")
            assert detail == f"GET /v1/flood answered with more than {CAP} bytes, the most a response may have " + (
                "(web.maxResponseBytes)"
            )
        assert await run(session, app, "slow", seconds=0) == {"slept": True}
    sent = httpx2.get(f"{home.server.url}/v1/flood-sent").json()
    assert len(sent) == 2
    assert all(count < huge for count in sent), sent


async def test_destinations_outside_the_rules_are_refused(home: Home) -> None:
    home.config = {}
    plain = home.install(SHAPE_A, "dev.aai.plain")
    private = home.install(SHAPE_A, "dev.aai.private", base="https://10.255.255.1/v1")
    async with gateway(home) as session:
        code, kind, detail = await fail(session, plain, "list_tasks")
        assert (code, kind) == (-32013, "API_REQUEST_FAILED")
        assert detail.startswith("plain http is only allowed to loopback addresses when web.allowHttpLoopback is set")
        code, _, detail = await fail(session, private, "list_tasks")
        assert code == -32013
        assert detail == (
            "10.255.255.1 resolves to 10.255.255.1, which is a private address, refused unless "
            "web.allowPrivateNetworks is set in config.json"
        )


async def test_keys_and_tokens_are_sent_and_never_shown(home: Home) -> None:
    header_env = home.install(SHAPE_A, "dev.aai.key-header", {"type": "api_key", "env_var": "REST_KEY"})
    query_config = home.install(
        SHAPE_A, "dev.aai.key-query", {"type": "api_key", "key_name": "api_key", "key_placement": "query"}
    )
    bearer_env = home.install(SHAPE_A, "dev.aai.bearer-env", {"type": "bearer", "env_var": "REST_TOKEN"})
    bearer_config = home.install(SHAPE_C, "dev.aai.bearer-config", {"type": "bearer"})
    missing = home.install(SHAPE_A, "dev.aai.no-key", {"type": "api_key", "env_var": "REST_UNSET_KEY"})
    wrong = home.install(SHAPE_A, "dev.aai.wrong-key", {"type": "api_key", "env_var": "REST_WRONG_KEY"})
    home.config.update(
        logLevel="debug",
        apps={
            query_config: {"apiKey": {"$env": "REST_CONFIG_KEY"}},
            bearer_config: {"apiKey": {"$env": "REST_CONFIG_TOKEN"}},
        },
    )
    env = {
        "REST_KEY": API_KEY,
        "REST_TOKEN": BEARER,
        "REST_CONFIG_KEY": API_KEY,
        "REST_CONFIG_TOKEN": BEARER,
        "REST_WRONG_KEY": WRONG_KEY,
    }
    replies: list[str] = []

    async def call(app: str, tool: str, **args: Any) -> Any:
        replies.append(json.dumps(await run(session, app, tool, **args)))
        return json.loads(replies[-1])

    async def refused(app: str, tool: str, **args: Any) -> tuple[int, str, str]:
        code, kind, detail = await fail(session, app, tool, **args)
        replies.append(detail)
        return code, kind, detail

    async with gateway(home, **env) as session:
        echoed = await call(header_env, "secure", kind="header")
        assert echoed["headers"]["x-api-key"] == "[redacted]"
        echoed = await call(query_config, "secure", kind="query")
        assert echoed["query"] == "api_key=[redacted]"
        echoed = await call(bearer_env, "secure", kind="bearer")
        assert echoed["headers"]["authorization"] == "[redacted]"
        echoed = await call(bearer_config, "secure", kind="bearer")
        assert echoed["headers"]["authorization"] == "[redacted]"
        assert (await call(header_env, "create_task", title="with a key"))["id"] == "t1"
        assert (await call(header_env, "echo", segment="s"))["headers"]["x-api-key"] == "[redacted]"

        code, kind, detail = await refused(missing, "list_tasks")
        assert (code, kind) == (-32011, "AUTH_REQUIRED")
        assert detail == (
            "dev.aai.no-key needs an API key: set the environment variable REST_UNSET_KEY for the gateway, or add "
            '"apps": {"dev.aai.no-key": {"apiKey": {"$env": "NAME"}}} to '
            f"{home.aai / 'config.json'}, where NAME is an environment variable of the gateway that holds it"
        )
        code, kind, detail = await refused(wrong, "secure", kind="header")
        assert (code, kind) == (-32011, "AUTH_REQUIRED")
        assert detail.startswith(
            'GET /v1/secure/header answered 401 Unauthorized: {"error":"invalid credential: [redacted]"}; '
            "the API key from the environment variable REST_WRONG_KEY was refused; put a valid one there"
        )
        code, kind, detail = await refused(query_config, "secure", kind="header")
        assert (code, kind) == (-32011, "AUTH_REQUIRED")
        assert detail.endswith(
            f"the API key from apps.{query_config}.apiKey in {home.aai / 'config.json'} was refused; "
            "put a valid one there"
        )
        code, _, _ = await refused(query_config, "status", code=500)
        assert code == -32013
        code, _, _ = await refused(bearer_env, "redirect", where="away")
        assert code == -32013
    written = home.written()
    assert "dev.aai.key-header:secure ok" in written
    for secret in (API_KEY, BEARER, WRONG_KEY):
        assert secret not in written
        assert all(secret not in reply for reply in replies)


def oauth_app(server: RestServer) -> tuple[Descriptor, Binding, Tool]:
    doc = json.loads(SHAPE_A.read_text())
    doc["platforms"]["web"]["base_url"] = f"{server.url}/v1"
    doc["platforms"]["web"]["auth"] = {
        "type": "oauth2",
        "auth_url": f"{server.url}/oauth/authorize",
        "token_url": f"{server.url}/oauth/token",
        "token_placement": "header",
        "token_prefix": "Bearer",
    }
    app = check_bytes(json.dumps(doc).encode(), "oauth").descriptor
    assert app is not None
    binding = app.bindings["web"]
    tool = binding.tool("secure")
    assert tool is not None
    return app, binding, tool


async def test_oauth2_tokens_come_from_the_auth_layer_and_refresh_once(
    rest_server: RestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, with the auth layer's `access_token` stood in for: its contract, not its flow."""
    tokens: list[str] = []
    asked: list[tuple[str, str, str, bool]] = []

    async def access_token(
        settings: Settings, app_id: str, site: str, auth: Mapping[str, Any], *, force_refresh: bool = False
    ) -> str:
        asked.append((app_id, site, auth["token_url"], force_refresh))
        if not tokens:
            raise AuthRequired(f"sign in to {app_id} first")
        return tokens.pop(0)

    fake = types.ModuleType(OAUTH_MODULE)
    monkeypatch.setattr(fake, "access_token", access_token, raising=False)
    monkeypatch.setitem(sys.modules, OAUTH_MODULE, fake)
    app, binding, tool = oauth_app(rest_server)
    executor = HttpExecutor(Settings(scan_paths=(), platform="linux", web_allow_http_loopback=True), environ={})
    call = ToolCall(app, binding, tool, {"kind": "bearer"}, timeout=10)
    try:
        tokens[:] = [f"stale-{BEARER}", BEARER]
        result = await executor.execute(call)
        assert result["headers"]["authorization"] == "[redacted]"
        once = (app.app_id, rest_server.url, f"{rest_server.url}/oauth/token")
        assert asked == [(*once, False), (*once, True)]

        tokens[:] = ["stale", "still-stale"]
        with pytest.raises(AuthExpired) as expired:
            await executor.execute(call)
        assert "sign in again" in expired.value.detail
        assert "stale" not in expired.value.detail

        tokens[:] = []
        with pytest.raises(AuthRequired, match=r"sign in to dev\.aai\.rest first"):
            await executor.execute(call)
    finally:
        await executor.aclose()
    assert rest_server.seen().count("/v1/secure/bearer") == 4

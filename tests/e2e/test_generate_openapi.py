"""`aai-gateway --generate` from OpenAPI 3, for real: tests/apps/rest_server.openapi.json as a file and
as served by tests/apps/rest_server.py itself, `validate`, install, then the generated tools driven
through `aai-gateway --mcp` with the SDK client against the running server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.e2e.mcp_client import stdio_session, text_of
from tests.support import TEST_APPS, gateway_command, read_line, stop

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

DOCUMENT = TEST_APPS / "rest_server.openapi.json"
API_KEY = f"api-key-{uuid.uuid4().hex}"


@pytest.fixture
def server_url() -> Iterator[str]:
    env = {**os.environ, "REST_API_KEY": API_KEY, "REST_BEARER_TOKEN": "unused"}
    proc = subprocess.Popen(
        [sys.executable, str(TEST_APPS / "rest_server.py")], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        line = read_line(proc, 15)
        assert line.startswith("ready http://127.0.0.1:"), f"rest_server.py printed {line!r}"
        yield line.removeprefix("ready ")
    finally:
        stop(proc)


def home_env(home: Path, app_id: str) -> dict[str, str]:
    (home / ".aai").mkdir(parents=True, exist_ok=True)
    config = {"web": {"allowHttpLoopback": True}, "apps": {app_id: {"apiKey": {"$env": "GEN_REST_KEY"}}}}
    (home / ".aai" / "config.json").write_text(json.dumps(config))
    return {"HOME": str(home), "AAI_PLATFORM": "linux", "GEN_REST_KEY": API_KEY}


def gateway(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def generate(env: dict[str, str], out: Path, source: str, *args: str) -> dict[str, Any]:
    generated = gateway(env, "--generate", source, "--out", str(out), *args)
    assert generated.returncode == 0, generated.stderr
    assert generated.stdout == ""
    validated = gateway(env, "validate", str(out))
    assert validated.returncode == 0, validated.stdout
    doc: dict[str, Any] = json.loads(out.read_text())
    assert f"wrote {out}: {doc['appId']}, 7 tools from {source}" in generated.stderr
    return doc


def install(home: Path, doc: dict[str, Any]) -> str:
    app_id: str = doc["appId"]
    target = home / ".aai" / app_id / "aai.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(doc))
    return app_id


async def run(session: ClientSession, app: str, tool: str, **args: Any) -> Any:
    return json.loads(text_of(await session.call_tool("aai_exec", {"app": app, "tool": tool, "args": args})))


async def drive(session: ClientSession, app: str) -> None:
    created = await run(session, app, "create_task", title="from openapi", tags=["gen"], priority=2)
    assert created == {"id": "t1", "title": "from openapi", "tags": ["gen"], "done": False, "priority": 2}
    assert (await run(session, app, "get_task", id="t1"))["title"] == "from openapi"
    changed = await run(session, app, "update_task", id="t1", done=True)
    assert changed["done"] is True
    assert await run(session, app, "list_tasks", tag="gen", limit=5) == {"tasks": [changed]}
    echoed = await run(session, app, "secure_echo")
    assert echoed["method"] == "POST"
    assert echoed["path"] == "/v1/secure/header"
    assert "x-api-key" in echoed["headers"]  # the server checked it; the gateway redacts it in the reply


async def test_generate_from_the_file(tmp_path: Path, server_url: str) -> None:
    home = tmp_path / "home"
    env = home_env(home, "dev.aai.gen-file")
    doc = generate(env, tmp_path / "gen.json", str(DOCUMENT), "--app-id", "dev.aai.gen-file")
    web = doc["platforms"]["web"]
    assert web["base_url"] == "https://example.invalid"  # servers[0].url is relative; no URL to resolve it
    assert web["auth"] == {"type": "api_key", "key_name": "X-API-Key", "key_placement": "header"}
    web["base_url"] = f"{server_url}/v1"
    app = install(home, doc)
    async with stdio_session(env, home / "stderr.log") as session:
        await drive(session, app)


async def test_generate_from_the_servers_url(tmp_path: Path, server_url: str) -> None:
    home = tmp_path / "home"
    app_id = "x-1.x-0.x-0.x-127.rest-tasks"
    env = home_env(home, app_id)
    doc = generate(env, tmp_path / "gen.json", f"{server_url}/v1/openapi.json")
    assert doc["appId"] == app_id
    assert doc["platforms"]["web"]["base_url"] == f"{server_url}/v1"
    install(home, doc)
    async with stdio_session(env, home / "stderr.log") as session:
        await drive(session, app_id)


def test_plain_http_url_needs_allow_http_loopback(tmp_path: Path, server_url: str) -> None:
    home = tmp_path / "home"
    env = home_env(home, "dev.aai.x")
    (home / ".aai" / "config.json").write_text("{}")
    refused = gateway(env, "--generate", f"{server_url}/v1/openapi.json")
    assert refused.returncode == 1
    assert "plain http" in refused.stderr

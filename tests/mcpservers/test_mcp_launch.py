"""What stops an MCP server from starting is said clearly, naming the app and what is missing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.auth.secrets import open_store
from aai_gateway.config import load_settings
from aai_gateway.descriptor.validate import check_document
from aai_gateway.errors import AaiError
from aai_gateway.executors.mcp_launch import launch_of
from aai_gateway.service import Caller, Gateway
from tests.mcpservers.servers import descriptor, install, node, server_js

pytestmark = pytest.mark.anyio


async def failure(tmp_path: Path, execution: dict[str, Any]) -> AaiError:
    home = tmp_path / "home"
    install(home / ".aai", descriptor("mcp.broken", execution))
    gateway = Gateway(load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"}))
    try:
        with pytest.raises(AaiError) as caught:
            await gateway.call("mcp.broken", "read_graph", {}, Caller(name="cli", transport="cli"))
        assert gateway.guide("mcp.broken")  # the gateway still serves
    finally:
        await gateway.aclose()
    return caught.value


async def test_a_missing_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AAI_TEST_NO_SUCH_KEY", raising=False)
    execution = {"type": "mcp", "command": node(), "env": {"API_KEY": {"$env": "AAI_TEST_NO_SUCH_KEY"}}}
    error = await failure(tmp_path, execution)
    assert error.type == "AUTH_REQUIRED"
    assert "mcp.broken needs the environment variable AAI_TEST_NO_SUCH_KEY (execution.env.API_KEY)" in error.detail


async def test_a_missing_command_and_a_missing_folder(tmp_path: Path) -> None:
    error = await failure(tmp_path, {"type": "mcp", "command": str(tmp_path / "no-such-server")})
    assert error.type == "APP_NOT_RUNNING"
    assert "mcp.broken could not be started: the command was not found" in error.detail
    nowhere = {"type": "mcp", "command": node(), "args": [server_js("memory")], "cwd": str(tmp_path / "gone")}
    error = await failure(tmp_path, nowhere)
    assert error.type == "APP_NOT_RUNNING"
    assert "gone" in error.detail


async def test_a_server_that_exits_at_once(tmp_path: Path) -> None:
    error = await failure(tmp_path, {"type": "mcp", "command": "sh", "args": ["-c", "echo 'no config' >&2; exit 3"]})
    assert error.type == "APP_NOT_RUNNING"
    assert "no config" in error.detail


async def test_secrets_from_the_environment_and_the_secret_store_reach_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'no-bus'}")  # the store's file, then
    monkeypatch.setenv("AAI_TEST_PLAIN_KEY", "from-the-environment")
    home = tmp_path / "home"
    env = {
        "FROM_ENV": {"$env": "AAI_TEST_PLAIN_KEY"},
        "FROM_STORE": {"$keyring": "mcp.everything|TOKEN"},
        "PLAIN": "as-written",
    }
    execution = {"type": "mcp", "command": node(), "args": [server_js("everything"), "stdio"], "env": env}
    install(home / ".aai", descriptor("mcp.everything", execution))
    settings = load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"})
    open_store(settings, probe_timeout=2).set("mcp.everything|TOKEN", "from-the-store")
    gateway = Gateway(settings)
    try:
        result = await gateway.call("mcp.everything", "get-env", {}, Caller(name="cli", transport="cli"))
    finally:
        await gateway.aclose()
    shown = json.loads(result["content"][0]["text"])
    # The secrets reached the server: what it says of them comes back cut, as nothing else would be.
    assert (shown["FROM_ENV"], shown["FROM_STORE"], shown["PLAIN"]) == ("[redacted]", "[redacted]", "as-written")
    text = json.dumps(result)
    assert "from-the-" not in text
    assert "AAI_TEST_PLAIN_KEY" not in text  # the gateway's own environment is not passed on


async def test_an_http_servers_headers_carry_the_web_apps_auth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAI_TEST_REMOTE_TOKEN", "t0ken")
    monkeypatch.setenv("AAI_TEST_TENANT", "acme")
    doc = descriptor(
        "mcp.remote",
        {"type": "mcp", "url": "https://mcp.example.com/mcp", "headers": {"X-Tenant": {"$env": "AAI_TEST_TENANT"}}},
    )
    doc["auth"] = {"type": "bearer", "bearer": {"envVar": "AAI_TEST_REMOTE_TOKEN"}}
    loaded = check_document(doc, "aai.json")
    assert loaded.descriptor is not None, loaded.problems
    binding = loaded.descriptor.mcp
    assert binding is not None
    settings = load_settings({"HOME": str(tmp_path), "AAI_PLATFORM": "linux"})
    launch = await launch_of(loaded.descriptor, binding, settings)
    assert launch.url == "https://mcp.example.com/mcp"
    assert dict(launch.headers) == {"X-Tenant": "acme", "Authorization": "Bearer t0ken"}
    assert "t0ken" not in repr(launch)

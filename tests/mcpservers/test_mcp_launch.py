"""What stops an MCP server from starting is said clearly, naming the app and what is missing."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from aai_gateway.auth.secrets import open_store
from aai_gateway.config import load_settings
from aai_gateway.descriptor.validate import check_document
from aai_gateway.errors import AaiError
from aai_gateway.executors.mcp_launch import launch_of
from aai_gateway.service import Caller, Gateway
from tests.e2e.mcp_client import error_of
from tests.mcpservers.servers import descriptor, install, node, server_js
from tests.mcpservers.test_mcp_apps import env_of
from tests.mcpservers.test_server_processes import killing_leftovers
from tests.support import gateway_command

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


async def test_a_missing_command(tmp_path: Path) -> None:
    error = await failure(tmp_path, {"type": "mcp", "command": str(tmp_path / "no-such-server")})
    assert error.type == "APP_NOT_RUNNING"
    assert "mcp.broken could not be started: the command was not found" in error.detail


@pytest.mark.hostile("mcp-server")
@pytest.mark.parametrize(
    ("folder", "said"),
    [
        ("gone", "does not exist"),
        ("a-file", "is not a folder"),
        ("a-file/below", "is not a folder"),
    ],
)
async def test_a_folder_that_cannot_be_the_servers(tmp_path: Path, folder: str, said: str) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    cwd = str(tmp_path / folder)
    error = await failure(tmp_path, {"type": "mcp", "command": node(), "args": [server_js("memory")], "cwd": cwd})
    assert error.type == "APP_NOT_RUNNING"
    assert error.detail == f"mcp.broken could not be started: its folder {cwd} (execution.cwd) {said}"


@pytest.mark.hostile("mcp-server")
async def test_a_folder_the_server_may_not_enter(tmp_path: Path) -> None:
    """Root may enter any folder, so there the gateway runs as nobody (in a folder of its own: the test's
    temporary folder is root's alone)."""
    base = Path(tempfile.mkdtemp(prefix="aai-cwd-"))
    home, locked = base / "home", base / "locked"
    try:
        base.chmod(0o755)
        locked.mkdir()
        execution = {"type": "mcp", "command": sys.executable, "args": ["-c", "pass"], "cwd": str(locked)}
        install(home / ".aai", descriptor("mcp.broken", execution))
        command = [gateway_command(), "--mcp"]
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody").pw_uid
            for path in [base, *base.rglob("*")]:
                os.chown(path, nobody, nobody)
            command = ["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups", *command]
        locked.chmod(0)
        params = StdioServerParameters(command=command[0], args=command[1:], env=env_of(home))
        with killing_leftovers(home), (base / "gateway.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                error = await error_of(session, "aai_exec", {"app": "mcp.broken", "tool": "any", "args": {}})
        assert error.data is not None
        assert error.data["type"] == "APP_NOT_RUNNING", error
        why = f"its folder {locked} (execution.cwd) cannot be entered (permission denied)"
        assert error.data["detail"] == f"mcp.broken could not be started: {why}", error
    finally:
        locked.chmod(0o700)
        shutil.rmtree(base)


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

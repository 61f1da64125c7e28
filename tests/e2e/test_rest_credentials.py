"""A web app with no credential says how to give one before it tries the network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.mcp_client import error_of, stdio_session
from tests.support import EXAMPLES, install_descriptor

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

GITHUB = EXAMPLES / "com.github.api" / "aai.json"


@pytest.mark.parametrize("base_url", ["https://api.github.com", "https://api.github.invalid"])
async def test_a_missing_token_is_auth_required_before_the_host_is_resolved(tmp_path: Path, base_url: str) -> None:
    home = tmp_path / "home"
    target = install_descriptor(home / ".aai", GITHUB)
    doc = json.loads(target.read_text())
    doc["platforms"]["web"]["base_url"] = base_url
    target.write_text(json.dumps(doc))
    config = {"errorStyle": "jsonrpc", "consent": {"rules": [{"app": "com.github.api", "decision": "allow"}]}}
    (home / ".aai" / "config.json").write_text(json.dumps(config))
    env = {"HOME": str(home), "AAI_PLATFORM": "linux"}  # no GITHUB_TOKEN, and no other variable
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        error = await error_of(
            session, "aai_exec", {"app": "com.github.api", "tool": "get_authenticated_user", "args": {}}
        )
    assert isinstance(error.data, dict)
    assert (error.code, error.data["type"]) == (-32011, "AUTH_REQUIRED")
    assert "set the environment variable GITHUB_TOKEN" in error.data["detail"]
    assert "resolve" not in error.data["detail"]

"""The misbehaving test server itself, served as an app: it answers as its plan says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import text_of
from tests.mcpservers.servers import descriptor, hostile
from tests.mcpservers.test_mcp_apps import exec_, gateway

pytestmark = pytest.mark.anyio


async def test_the_hostile_server_answers_as_planned(tmp_path: Path) -> None:
    plan: dict[str, Any] = {"calls": {"echo": [{"echo": True}], "secret": [{"env": "TOKEN"}]}}
    plan["tools"] = [
        {"name": "echo", "description": "Echoes", "inputSchema": {"type": "object"}},
        {"name": "secret", "description": "Says the token", "inputSchema": {"type": "object"}},
    ]
    app = descriptor("mcp.hostile", hostile(tmp_path / "plan.json", plan, TOKEN="t0ken"))
    async with gateway(tmp_path, app) as session:
        echoed = await exec_(session, "mcp.hostile", "echo", {"x": 1})
        assert json.loads(text_of(echoed)) == {"x": 1}
        assert text_of(await exec_(session, "mcp.hostile", "secret")) == "t0ken"

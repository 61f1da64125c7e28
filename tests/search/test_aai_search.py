"""`aai_search` through the installed command and the SDK's client: installed apps, the library, MCP servers
from their last tool list (never started by a search), both spellings, and what it refuses."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import mcp_types as types
import pytest

from aai_gateway.search.schema import OUTPUT_SCHEMA
from tests.e2e.mcp_client import error_of, http_session, stdio_session, text_of, web_gateway
from tests.mcpservers.servers import descriptor, hostile, install
from tests.support import TEST_APPS, Bus, install_descriptor

pytestmark = pytest.mark.anyio


def env_of(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"}


def echo_home(tmp_path: Path, **config: Any) -> Path:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}, **config}))
    return home


def hits(result: types.CallToolResult) -> list[dict[str, Any]]:
    assert not result.is_error, result
    found = result.structured_content
    assert found is not None
    jsonschema.validate(found, OUTPUT_SCHEMA)
    results: list[dict[str, Any]] = found["results"]
    return results


async def test_search_finds_installed_and_library_operations_with_their_parameters(
    tmp_path: Path, bus: Bus, echo_app: None
) -> None:
    home = echo_home(tmp_path)
    async with stdio_session(bus.env() | env_of(home), tmp_path / "gateway.log") as session:
        listed = [t.name for t in (await session.list_tools()).tools]
        assert listed == [
            "aai_search",
            "aai_install",
            "aai_exec",
            "aai_batch",
            "aai_run",
            "aai_wait",
            "web_discover",
            "app_dev_aai_echo",
        ]
        search_tool = next(t for t in (await session.list_tools()).tools if t.name == "aai_search")
        assert search_tool.output_schema == OUTPUT_SCHEMA

        echo = hits(await session.call_tool("aai_search", {"query": "add two numbers"}))[0]
        assert (echo["app"]["id"], echo["tool"], echo["installed"], echo["source"]) == (
            "dev.aai.echo",
            "add",
            True,
            "installed",
        )
        assert set(echo["parameters"]["properties"]) >= {"a", "b"}

        shot = hits(await session.call_tool("aai_search", {"query": "take a screenshot", "limit": 2}))
        assert len(shot) <= 2
        assert shot[0]["app"]["id"] == "org.gnome.shell.screenshot"
        assert shot[0]["installed"] is False
        assert shot[0]["source"] == "library"
        assert "filename" in shot[0]["parameters"]["properties"]
        text = text_of(await session.call_tool("aai_search", {"query": "take a screenshot", "limit": 2}))
        assert "aai_install {app: org.gnome.shell.screenshot}" in text

        # the operation a hit names runs with aai_exec at once
        ran = await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "add", "args": {"a": 2, "b": 3}})
        assert "5" in text_of(ran)


async def test_nothing_fits_says_so_and_points_onwards(tmp_path: Path) -> None:
    home = echo_home(tmp_path)
    async with stdio_session(env_of(home), tmp_path / "gateway.log") as session:
        result = await session.call_tool("aai_search", {"query": "xylophone quantum zebra"})
        assert hits(result) == []
        assert result.structured_content is not None
        assert result.structured_content["fits"] is False
        assert "web_discover" in text_of(result)
        assert "--generate" in text_of(result)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({}, "query must be a non-empty text"),
        ({"query": "  "}, "query must be a non-empty text"),
        ({"query": "x" * 1001}, "at most 1000"),
        ({"query": "pause", "limit": 0}, "limit must be a whole number from 1 to 25"),
        ({"query": "pause", "limit": 26}, "limit must be a whole number from 1 to 25"),
        ({"query": "pause", "limit": "5"}, "limit must be a whole number from 1 to 25"),
        ({"query": "pause", "limit": True}, "limit must be a whole number from 1 to 25"),
    ],
)
async def test_bad_arguments_are_refused_clearly(tmp_path: Path, arguments: dict[str, Any], said: str) -> None:
    home = echo_home(tmp_path)
    async with stdio_session(env_of(home), tmp_path / "gateway.log") as session:
        error = await error_of(session, "aai_search", arguments)
        assert error.code == -32005
        assert said in str(error.data)


async def test_the_seed_spelling_and_http(tmp_path: Path) -> None:
    home = echo_home(tmp_path, toolNames="seed")
    with web_gateway(env_of(home), tmp_path / "web.log") as url:
        async with http_session(url) as session:
            names = [t.name for t in (await session.list_tools()).tools]
            assert "aai:search" in names
            for name in ("aai:search", "aai_search"):
                found = hits(await session.call_tool(name, {"query": "negate a number"}))
                assert (found[0]["app"]["id"], found[0]["tool"]) == ("dev.aai.echo", "negate")


async def test_an_mcp_servers_tools_are_found_without_starting_it(tmp_path: Path) -> None:
    started = tmp_path / "started"
    plan = {
        "startFile": str(started),
        "tools": [
            {
                "name": "translate_text",
                "description": "Translate a text into another language",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            }
        ],
    }
    home = tmp_path / "home"
    install(home / ".aai", descriptor("mcp.translator", hostile(tmp_path / "plan.json", plan)))
    env = env_of(home)
    async with stdio_session(env, tmp_path / "gateway.log") as session:
        before = hits(await session.call_tool("aai_search", {"query": "translate a text into French"}))
        assert all(hit["app"]["id"] != "mcp.translator" for hit in before)  # never listed yet: nothing known
        assert not started.exists()
        assert "translate_text" in text_of(await session.call_tool("app_mcp_translator", {}))
        assert started.exists()
    started.unlink()
    async with stdio_session(env, tmp_path / "gateway.log") as session:
        found = hits(await session.call_tool("aai_search", {"query": "translate a text into French"}))
        assert (found[0]["app"]["id"], found[0]["tool"], found[0]["installed"]) == (
            "mcp.translator",
            "translate_text",
            True,
        )
    assert not started.exists()

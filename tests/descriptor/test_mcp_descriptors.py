"""Descriptors of MCP servers (execution type `mcp`) in shapes B and C: accepted, normalised, refused."""

from __future__ import annotations

from typing import Any

import pytest

from aai_gateway.descriptor.validate import check_document
from aai_gateway.executors.mcp_tools import SERVER_NAME, gateway_tools

CAMEL: dict[str, Any] = {
    "schemaVersion": "1.0",
    "version": "1.0.0",
    "platform": "mcp",
    "app": {"id": "mcp.filesystem", "name": {"en": "Filesystem"}, "defaultLang": "en", "aliases": ["files"]},
    "execution": {
        "type": "mcp",
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
        "env": {"API_KEY": {"$env": "FS_API_KEY"}, "TOKEN": {"$keyring": "mcp.filesystem|TOKEN"}, "PLAIN": "x"},
        "cwd": "/some/dir",
    },
    "tools": [
        {"name": "read_file", "description": "override", "annotations": {"readOnlyHint": True}},
        {"name": "write_file", "rename": "save_file"},
        {"name": "move_file", "exclude": True},
    ],
}

SNAKE: dict[str, Any] = {
    "schema_version": "1.0",
    "version": "1.0.0",
    "platform": "mcp",
    "app": {"id": "mcp.remote", "name": "Remote", "description": "a streamable HTTP server"},
    "execution": {"type": "mcp", "url": "https://mcp.example.com/mcp", "headers": {"X-Key": {"$env": "KEY"}}},
    "auth": {"type": "bearer", "env_var": "REMOTE_TOKEN"},
}


def errors(doc: dict[str, Any]) -> list[tuple[str, str]]:
    loaded = check_document(doc, "aai.json")
    return [(p.pointer, p.message) for p in loaded.problems if p.severity == "error"]


def test_a_stdio_server_in_shape_c_serves_everywhere_with_its_overrides_kept() -> None:
    loaded = check_document(CAMEL, "aai.json")
    assert loaded.problems == ()
    app = loaded.descriptor
    assert app is not None
    binding = app.mcp
    assert binding is not None
    assert binding.automation == "mcp"
    assert binding.tools == ()  # the server lists them
    assert binding.options["command"] == "npx"
    assert binding.options["env"]["TOKEN"] == {"$keyring": "mcp.filesystem|TOKEN"}
    assert [o["name"] for o in binding.options["overrides"]] == ["read_file", "write_file", "move_file"]
    for platform in ("linux", "macos", "windows"):
        assert app.served(platform) == (binding,)


def test_an_http_server_in_shape_b_with_auth() -> None:
    loaded = check_document(SNAKE, "aai.json")
    assert loaded.problems == ()
    assert loaded.descriptor is not None
    binding = loaded.descriptor.mcp
    assert binding is not None
    assert binding.options["url"] == "https://mcp.example.com/mcp"
    assert binding.auth == {"type": "bearer", "env_var": "REMOTE_TOKEN"}


@pytest.mark.parametrize(
    ("change", "pointer", "words"),
    [
        ({"execution": {"type": "mcp"}}, "/execution", "needs 'command'"),
        ({"execution": {"type": "mcp", "command": "x", "url": "https://a/mcp"}}, "/execution/url", "keep one kind"),
        ({"execution": {"type": "mcp", "url": "ftp://a/mcp"}}, "/execution/url", "is not an http(s) URL"),
        ({"execution": {"type": "mcp", "command": "x", "env": {"A": 1}}}, "/execution/env/A", ""),
        ({"execution": {"type": "dbus", "service": "org.a.B"}}, "/execution/type", 'must be "mcp"'),
        ({"platform": "linux", "tools": []}, "/execution/type", "only for platform 'mcp'"),
        ({"auth": {"type": "bearer"}}, "/auth", "is for an HTTP server"),
        ({"tools": [{"name": "a", "parameters": {"type": "object"}}]}, "/tools/0/parameters", "the server's own"),
        ({"tools": [{"name": "a", "rename": "b c"}]}, "/tools/0/rename", ""),
        ({"tools": [{"name": "a"}, {"name": "a", "exclude": True}]}, "/tools/1/name", "already used"),
    ],
)
def test_problems_of_an_mcp_descriptor_name_their_place(change: dict[str, Any], pointer: str, words: str) -> None:
    found = errors({**CAMEL, **change})
    assert any(at == pointer and words in message for at, message in found), found


def test_overrides_rename_exclude_describe_and_annotate_the_servers_tools() -> None:
    listed = [
        {"name": "read_file", "description": "Read", "inputSchema": {"type": "object"}, "annotations": {}},
        {"name": "write_file", "description": "Write", "inputSchema": {"type": "object", "required": ["path"]}},
        {"name": "move_file", "description": "Move", "inputSchema": {"type": "object"}},
        {"name": "stat", "title": "File facts", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
    ]
    tools, _ = gateway_tools("mcp.filesystem", listed, CAMEL["tools"])
    assert [t.name for t in tools] == ["read_file", "save_file", "stat"]
    read, save, stat = tools
    assert read.description == "override"
    assert read.read_only
    assert save.options[SERVER_NAME] == "write_file"
    assert save.parameters == {"type": "object", "required": ["path"]}
    assert stat.description == "File facts"
    assert stat.returns == {"type": "object"}

"""Server lists as Claude Desktop, Claude Code, Cursor, VS Code and Codex write them, with secrets in
env and headers, for the `aai-gateway import` tests; and the shape every imported descriptor has."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.support import gateway_command

GITHUB_TOKEN = "ghp_R8x2LmQ9vT4nW7kP3sY6zA1bC5dE0fG2hJ4k"
DB_PASSWORD = "Pa55w0rd-Xyz81"
BRAVE_KEY = "BSAq7Xk2mP9rT4vW8yZ1bC3dF6gHj"
LINEAR_KEY = "lin_api_9Xk2mP7rT4vW8yZ1bC3dF6gH0jK5nQ"
CONTEXT7_KEY = "ctx7sk-4f9a1c2e-77b3-4d8e-9a10-5b6c7d8e9f01"
SLACK_TOKEN = "xoxb-2048-77531-Zq8XkP2mR7tV4wY9"
STRIPE_KEY = "rk_live_51Hx9QaLmN2oP3qR4sT5uV6w"
SECRETS = (GITHUB_TOKEN, DB_PASSWORD, BRAVE_KEY, LINEAR_KEY, CONTEXT7_KEY, SLACK_TOKEN, STRIPE_KEY)
"""Every secret the sample files hold in plain text; none may reach a descriptor."""

FILESYSTEM = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]
GITHUB = ["-y", "@modelcontextprotocol/server-github"]


def write_claude_desktop(home: Path) -> Path:
    path = home / ".config" / "Claude" / "claude_desktop_config.json"
    servers = {
        "filesystem": {"command": "npx", "args": FILESYSTEM},
        "github": {"command": "npx", "args": GITHUB, "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": GITHUB_TOKEN}},
        "postgres": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-postgres"],
            "env": {"DATABASE_CONNECTION": f"postgresql://app:{DB_PASSWORD}@db.internal:5432/app", "PGAPPNAME": "mcp"},
        },
        "half-written": {"args": ["--port", "3001"]},
    }
    return _write(path, json.dumps({"mcpServers": servers, "globalShortcut": "Ctrl+Space"}, indent=2))


def write_claude_code(home: Path, project: Path) -> tuple[Path, Path]:
    user = home / ".claude.json"
    document = {
        "numStartups": 42,
        "mcpServers": {
            "sentry": {
                "type": "http",
                "url": "https://mcp.sentry.dev/mcp",
                "headers": {"Authorization": "Bearer ${SENTRY_TOKEN}"},
            }
        },
        "projects": {
            str(project): {
                "allowedTools": [],
                "mcpServers": {
                    "filesystem": {"type": "stdio", "command": "npx", "args": FILESYSTEM, "env": {}},
                    "stripe": {
                        "type": "stdio",
                        "command": "npx",
                        "args": ["-y", "@stripe/mcp", "--tools=all"],
                        "env": {"STRIPE_SECRET_KEY": STRIPE_KEY},
                    },
                },
            }
        },
    }
    _write(user, json.dumps(document, indent=2))
    shared = {
        "mcpServers": {
            "memory": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-memory"],
                "env": {"MEMORY_FILE_PATH": "${MEMORY_FILE:-/tmp/memory.json}"},
            },
            "aai": {"command": "aai-gateway", "args": ["--mcp"]},
        }
    }
    return user, _write(project / ".mcp.json", json.dumps(shared, indent=2))


def write_cursor(home: Path) -> Path:
    text = f"""{{
  // Cursor keeps comments and trailing commas
  "mcpServers": {{
    "linear": {{
      "url": "https://mcp.linear.app/mcp",
      "headers": {{ "Authorization": "Bearer {LINEAR_KEY}", "X-Client": "cursor" }},
    }},
    "brave-search": {{
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-brave-search"],
      "env": {{ "BRAVE_API_KEY": "{BRAVE_KEY}" }}
    }},
    "legacy": {{ "url": "https://mcp.example.com/sse" }},
    "aai-http": {{ "url": "http://127.0.0.1:3000/mcp" }},
  }}
}}
"""
    return _write(home / ".cursor" / "mcp.json", text)


def write_vscode(home: Path) -> Path:
    document = {
        "inputs": [
            {"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": True},
            {"type": "promptString", "id": "notion-token", "description": "Notion token", "password": True},
        ],
        "servers": {
            "perplexity": {
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "server-perplexity-ask"],
                "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"},
            },
            "notion": {
                "type": "http",
                "url": "https://mcp.notion.com/mcp",
                "headers": {"Authorization": "Bearer ${input:notion-token}", "Notion-Version": "2022-06-28"},
            },
            "github": {
                "type": "stdio",
                "command": "npx",
                "args": GITHUB,
                "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_TOKEN}"},
            },
        },
    }
    return _write(home / ".config" / "Code" / "User" / "mcp.json", json.dumps(document, indent=2))


def write_codex(home: Path) -> Path:
    text = f"""model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
env_vars = ["HTTPS_PROXY"]

[mcp_servers.context7.env]
CONTEXT7_API_KEY = "{CONTEXT7_KEY}"

[mcp_servers.slack]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-slack"]
env = {{ SLACK_BOT_TOKEN = "{SLACK_TOKEN}", SLACK_TEAM_ID = "T01234567" }}
startup_timeout_sec = 20

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"
http_headers = {{ "X-Client" = "codex" }}
env_http_headers = {{ "X-Api-Key" = "DOCS_API_KEY" }}

[mcp_servers.paused]
command = "uvx"
args = ["mcp-server-time"]
enabled = false
"""
    return _write(home / ".codex" / "config.toml", text)


def write_all(home: Path, project: Path) -> list[Path]:
    return [
        write_claude_desktop(home),
        *write_claude_code(home, project),
        write_cursor(home),
        write_vscode(home),
        write_codex(home),
    ]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


APP_ID = re.compile(r"^mcp\.[a-z][a-z0-9-]*$")


def check_shape(descriptor: Any, folder: str | None = None) -> None:
    """The agreed camelCase form of an MCP server's descriptor, and no plain secret in it."""
    assert set(descriptor) == {"schemaVersion", "version", "platform", "app", "execution"}, descriptor
    assert descriptor["schemaVersion"] == "1.0"
    assert descriptor["version"] == "1.0.0"
    assert descriptor["platform"] == "mcp"
    app = descriptor["app"]
    assert set(app) == {"id", "name", "defaultLang", "description", "aliases"}
    assert APP_ID.fullmatch(app["id"]), app["id"]
    assert len(app["id"]) <= 255
    assert folder is None or app["id"] == folder
    assert isinstance(app["name"]["en"], str)
    assert app["name"]["en"]
    assert app["defaultLang"] == "en"
    assert isinstance(app["description"], str)
    assert app["aliases"] == [app["id"].removeprefix("mcp.")]
    execution = descriptor["execution"]
    assert execution["type"] == "mcp"
    if "url" in execution:
        assert set(execution) <= {"type", "url", "headers"}
        assert isinstance(execution["url"], dict) or execution["url"].startswith(("https://", "http://"))
        values = [execution["url"], *execution.get("headers", {}).values()]
    else:
        assert set(execution) <= {"type", "command", "args", "env", "cwd"}
        assert isinstance(execution["command"], str)
        values = [*execution["args"], *execution.get("env", {}).values()]
    for value in values:
        if isinstance(value, dict):
            assert list(value) in (["$env"], ["$keyring"]), value
            if "$keyring" in value:
                assert value["$keyring"].startswith(app["id"] + "|")
        else:
            assert isinstance(value, str)
    text = json.dumps(descriptor)
    assert not [s for s in SECRETS if s in text]


def secrets_in(files: Iterable[Path]) -> list[tuple[Path, str]]:
    """Each (file, secret) where a sample secret appears in the file's bytes."""
    return [(f, s) for f in files for s in SECRETS if s.encode() in f.read_bytes()]


def gateway_validate(paths: Iterable[Path], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`aai-gateway validate` on imported descriptors: the gateway's own verdict, for the tests to use
    once the descriptor schemas know `platform: mcp` and `execution.type: mcp`."""
    return subprocess.run(
        [gateway_command(), "validate", "--json", *map(str, paths)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

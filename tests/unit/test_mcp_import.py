"""Reading other clients' MCP server lists and planning one descriptor per server (authoring/mcp_import.py).

The keyring, the written files and the command's output are held by tests/e2e/test_import.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aai_gateway.authoring.mcp_clients import EnvVar, Input, known_files, project_files, read
from aai_gateway.authoring.mcp_import import Plan, client_entry, plan
from aai_gateway.authoring.secret_shapes import looks_secret
from tests.import_samples import (
    BRAVE_KEY,
    CONTEXT7_KEY,
    FILESYSTEM,
    GITHUB,
    GITHUB_TOKEN,
    LINEAR_KEY,
    check_shape,
    write_all,
    write_claude_code,
    write_claude_desktop,
    write_codex,
    write_cursor,
    write_vscode,
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def project(home: Path) -> Path:
    folder = home / "work" / "shop"
    folder.mkdir(parents=True)
    return folder


def env_of(home: Path) -> dict[str, str]:
    return {"HOME": str(home)}


def planned(home: Path, files: list[tuple[str | None, Path]], *, force: bool = False) -> Plan:
    return plan(read(files, env_of(home)), home / ".aai", env_of(home), "env", None, force=force, gateway_port=3000)


def by_id(result: Plan) -> dict[str, dict]:  # type: ignore[type-arg]
    return {p.app_id: p.descriptor for p in result.servers}


def test_known_files_finds_every_client_on_linux(home: Path, project: Path) -> None:
    written = write_all(home, project)
    found = known_files(env_of(home), project, project=True)
    assert [c for c, _ in found] == ["claude-desktop", "claude-code", "claude-code", "cursor", "vscode", "codex"]
    assert sorted(p for _, p in found) == sorted(written)
    user_only = known_files(env_of(home), project)
    assert [p for _, p in user_only] == [p for _, p in found if p != project / ".mcp.json"]
    assert project_files(env_of(home), project) == [("claude-code", project / ".mcp.json")]
    assert [p for _, p in known_files(env_of(home), project, ["cursor"])] == [home / ".cursor" / "mcp.json"]


def test_the_format_of_a_given_file_is_told_from_its_name_and_content(home: Path, project: Path) -> None:
    files = write_all(home, project)
    result = read([(None, f) for f in files], env_of(home))
    assert [c for c, _ in result.files] == ["claude-desktop", "claude-code", "claude-code", "cursor", "vscode", "codex"]


def test_claude_desktop_entries_and_a_broken_one(home: Path) -> None:
    result = read([(None, write_claude_desktop(home))], env_of(home))
    assert [s.source.name for s in result.servers] == ["filesystem", "github", "postgres"]
    github = result.servers[1]
    assert (github.transport, github.command, github.args[0]) == ("stdio", ("npx",), ("-y",))
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": (GITHUB_TOKEN,)}
    [problem] = result.problems
    assert "'half-written'" in str(problem)
    assert "neither command nor url" in str(problem)
    assert "claude_desktop_config.json" in str(problem)


def test_claude_code_user_project_and_shared_lists(home: Path, project: Path) -> None:
    user, shared = write_claude_code(home, project)
    result = read([(None, user), (None, shared)], env_of(home))
    names = [(s.source.name, s.source.scope) for s in result.servers]
    assert names == [("sentry", None), ("filesystem", str(project)), ("stripe", str(project)), ("memory", None),
                     ("aai", None)]  # fmt: skip
    sentry = result.servers[0]
    assert sentry.transport == "http"
    assert sentry.headers == {"Authorization": ("Bearer ", EnvVar("SENTRY_TOKEN"))}
    assert result.servers[3].env == {"MEMORY_FILE_PATH": (EnvVar("MEMORY_FILE", "/tmp/memory.json"),)}


def test_cursor_jsonc_and_sse(home: Path) -> None:
    result = read([(None, write_cursor(home))], env_of(home))
    assert [(s.source.name, s.transport) for s in result.servers] == [
        ("linear", "http"),
        ("brave-search", "stdio"),
        ("legacy", "sse"),
        ("aai-http", "http"),
    ]


def test_vscode_inputs_and_env_references(home: Path) -> None:
    result = read([(None, write_vscode(home))], env_of(home))
    perplexity, notion, github = result.servers
    assert perplexity.env == {"PERPLEXITY_API_KEY": (Input("perplexity-key"),)}
    assert notion.headers["Authorization"] == ("Bearer ", Input("notion-token"))
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": (EnvVar("GITHUB_TOKEN"),)}


def test_vscode_input_nobody_defines_is_a_problem(home: Path, tmp_path: Path) -> None:
    path = tmp_path / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"inputs": [{"id": "a", "type": "promptString"}],
                                "servers": {"x": {"command": "x", "env": {"K": "${input:b}"}}}}))  # fmt: skip
    result = read([(None, path)], env_of(home))
    assert not result.servers
    assert "${input:b}" in str(result.problems[0])


def test_codex_tables(home: Path) -> None:
    result = read([(None, write_codex(home))], env_of(home))
    context7, slack, docs = result.servers
    assert context7.env == {"CONTEXT7_API_KEY": (CONTEXT7_KEY,), "HTTPS_PROXY": (EnvVar("HTTPS_PROXY"),)}
    assert slack.env["SLACK_TEAM_ID"] == ("T01234567",)
    assert docs.headers == {
        "X-Client": ("codex",),
        "X-Api-Key": (EnvVar("DOCS_API_KEY"),),
        "Authorization": ("Bearer ", EnvVar("DOCS_TOKEN")),
    }
    [paused] = result.skipped
    assert "'paused'" in str(paused)
    assert "disabled" in str(paused)


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("mcp.json", '{"mcpServers": {"a": {"command": "x"}}', "line 1, column 39"),
        ("mcp.json", '{\n  "servers": {\n    "a": {"command" "x"}\n  }\n}', "line 3, column 21"),
        ("config.toml", "[mcp_servers.a]\ncommand = \n", "line 2"),
    ],
)
def test_invalid_json_and_toml_name_the_file_and_position(tmp_path: Path, name: str, text: str, where: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    [problem] = read([(None, path)], {"HOME": str(tmp_path)}).problems
    assert problem.where == str(path)
    assert where in problem.message
    assert "JSON" in problem.message or "TOML" in problem.message


def test_unknown_formats_are_refused(tmp_path: Path) -> None:
    cases: dict[str, str | bytes] = {"settings.json": '{"editor.fontSize": 14}', "list.json": "[1, 2]",
                                     "other.toml": 'name = "x"\n', "binary.json": b"\xff\xfe{"}  # fmt: skip
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    missing = tmp_path / "absent.json"
    result = read([(None, tmp_path / n) for n in cases] + [(None, missing)], {"HOME": str(tmp_path)})
    messages = [p.message for p in result.problems]
    assert [m.split(":")[0] for m in messages[:3]] == ["unknown format"] * 3
    assert "not UTF-8" in messages[3]
    assert messages[4].startswith("cannot be read")


def test_files_without_servers_are_no_problem(tmp_path: Path) -> None:
    claude = tmp_path / ".claude.json"
    claude.write_text(json.dumps({"numStartups": 3, "projects": {"/x": {"allowedTools": []}}}))
    codex = tmp_path / "config.toml"
    codex.write_text('model = "gpt-5-codex"\n')
    result = read([("claude-code", claude), ("codex", codex)], {"HOME": str(tmp_path)})
    assert (result.servers, result.problems, len(result.files)) == ([], [], 2)


def test_vscode_settings_json_with_an_mcp_section(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"editor.fontSize": 14, "mcp": {"servers": {"time": {"command": "uvx"}}}}))
    result = read([(None, path)], {"HOME": str(tmp_path)})
    assert result.files == [("vscode", path)]
    assert [s.source.name for s in result.servers] == ["time"]


def test_a_file_of_another_client_given_with_from(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"a": {"command": "x"}}}))
    result = read([("cursor", path)], {"HOME": str(tmp_path)})
    assert result.files == [("cursor", path)]
    assert result.servers[0].source.client == "cursor"


def test_the_plan_moves_every_secret_out(home: Path, project: Path) -> None:
    result = planned(home, [(None, f) for f in write_all(home, project)])
    descriptors = by_id(result)
    for app_id, descriptor in descriptors.items():
        check_shape(descriptor, app_id)
    assert descriptors["mcp.github"]["execution"]["env"] == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": {"$env": "GITHUB_PERSONAL_ACCESS_TOKEN"}
    }
    assert descriptors["mcp.postgres"]["execution"]["env"] == {
        "DATABASE_CONNECTION": {"$env": "DATABASE_CONNECTION"},
        "PGAPPNAME": "mcp",
    }
    assert descriptors["mcp.linear"]["execution"] == {
        "type": "mcp",
        "url": "https://mcp.linear.app/mcp",
        "headers": {"Authorization": {"$env": "LINEAR_AUTHORIZATION"}, "X-Client": "cursor"},
    }
    assert descriptors["mcp.sentry"]["execution"]["headers"] == {"Authorization": {"$env": "SENTRY_AUTHORIZATION"}}
    assert descriptors["mcp.perplexity"]["execution"]["env"] == {"PERPLEXITY_API_KEY": {"$env": "PERPLEXITY_KEY"}}
    assert descriptors["mcp.notion"]["execution"]["headers"] == {
        "Authorization": {"$env": "NOTION_AUTHORIZATION"},
        "Notion-Version": "2022-06-28",
    }
    assert descriptors["mcp.slack"]["execution"]["env"] == {
        "SLACK_BOT_TOKEN": {"$env": "SLACK_BOT_TOKEN"},
        "SLACK_TEAM_ID": "T01234567",
    }
    assert descriptors["mcp.docs"]["execution"]["headers"] == {
        "X-Client": "codex",
        "X-Api-Key": {"$env": "DOCS_API_KEY"},
        "Authorization": {"$env": "DOCS_AUTHORIZATION"},
    }
    assert descriptors["mcp.memory"]["execution"]["env"] == {"MEMORY_FILE_PATH": {"$env": "MEMORY_FILE"}}
    variables = dict(result.variables())
    assert "Bearer $SENTRY_TOKEN" in variables["SENTRY_AUTHORIZATION"]
    assert "Bearer $DOCS_TOKEN" in variables["DOCS_AUTHORIZATION"]
    assert "the value it had in" in variables["LINEAR_AUTHORIZATION"]
    assert "'perplexity-key'" in variables["PERPLEXITY_KEY"]
    assert "'/tmp/memory.json' is not kept" in variables["MEMORY_FILE"]
    assert all(LINEAR_KEY not in text and BRAVE_KEY not in text for text in variables.values())


def test_the_same_server_in_several_clients_is_one_descriptor(home: Path, project: Path) -> None:
    result = planned(home, [(None, f) for f in write_all(home, project)])
    [filesystem] = [p for p in result.servers if p.descriptor["execution"].get("args") == FILESYSTEM]
    assert filesystem.app_id == "mcp.filesystem"
    assert [(s.client, s.scope) for s in filesystem.sources] == [
        ("claude-desktop", None),
        ("claude-code", str(project)),
    ]
    [github] = [p for p in result.servers if p.descriptor["execution"].get("args") == GITHUB]
    assert [s.client for s in github.sources] == ["claude-desktop", "vscode"]
    assert "other env or headers" in github.notes[0]
    ids = [p.app_id for p in result.servers]
    assert len(ids) == len(set(ids))
    assert sorted(ids) == sorted(
        ["mcp.filesystem", "mcp.github", "mcp.postgres", "mcp.sentry", "mcp.stripe", "mcp.memory", "mcp.linear",
         "mcp.brave-search", "mcp.perplexity", "mcp.notion", "mcp.context7", "mcp.slack", "mcp.docs"]
    )  # fmt: skip


def test_what_is_not_imported_and_why(home: Path, project: Path) -> None:
    result = planned(home, [(None, f) for f in write_all(home, project)])
    problems = {p.where.rsplit("server ", 1)[1]: p.message for p in result.problems}
    assert set(problems) == {"'half-written'", "'legacy'"}
    assert "SSE" in problems["'legacy'"]
    skipped = {p.where.rsplit("server ", 1)[1]: p.message for p in result.skipped}
    itself = "is aai-gateway itself; left as it is"
    assert skipped == {"'aai'": itself, "'aai-http'": itself, "'paused'": skipped["'paused'"]}


def test_names_become_unique_valid_app_ids(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    servers = {"My Server!": {"command": "a"}, "my-server": {"command": "b"}, "9lives": {"command": "c"},
               "": {"command": "d"}, "x" * 400: {"command": "e"}}  # fmt: skip
    path.write_text(json.dumps({"mcpServers": servers}))
    result = planned(home, [(None, path)])
    ids = [p.app_id for p in result.servers]
    assert ids[:4] == ["mcp.my-server", "mcp.my-server-2", "mcp.x-9lives", "mcp.server"]
    assert len(ids[4]) <= 255
    for planned_one in result.servers:
        check_shape(planned_one.descriptor, planned_one.app_id)


JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
SECRET_ARGS = {
    "header": (["-y", "mcp-remote", "https://x.example/mcp", "--header", f"Authorization: Bearer {LINEAR_KEY}"], 4),
    "header-equals": (["mcp-remote", "https://x.example/mcp", f"--header=Authorization:Bearer {LINEAR_KEY}"], 2),
    "header-short": (["-H", f"X-Api-Key: {BRAVE_KEY}"], 1),
    "flag": (["--api-key", "abc"], 1),
    "inline": ([f"--token={GITHUB_TOKEN}"], 0),
    "password": (["--user", "app", "--password", "hunter2"], 3),
    "short-p": (["-u", "app", "-p", "hunter2"], 3),
    "key-value": ([f"API_KEY={BRAVE_KEY}"], 0),
    "bare": ([GITHUB_TOKEN], 0),
    "slack": (["xoxp-2048-77531-Zq8XkP2mR7"], 0),
    "aws": (["--id", "AKIAIOSFODNN7EXAMPLE"], 1),
    "jwt": ([JWT], 0),
    "inside": ([f'{{"token": "{GITHUB_TOKEN}"}}'], 0),
    "dsn": (["postgresql://u:hunter2@db/x"], 0),
    "url-query": (["https://api.example.com/mcp?api_key=abc"], 0),
    "url-path": (["https://hooks.example.com/mcp/Zq8XkP2mR7tV4wY9aB3cD5eF/sse"], 0),
}


@pytest.mark.hostile("client-config")
@pytest.mark.parametrize("case", sorted(SECRET_ARGS))
def test_a_secret_in_args_becomes_a_reference(home: Path, tmp_path: Path, case: str) -> None:
    args, index = SECRET_ARGS[case]
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"srv": {"command": "srv", "args": args}}}))
    result = planned(home, [(None, path)])
    [server] = result.servers
    written = server.descriptor["execution"]["args"]
    variable = written[index]["$env"]
    assert written[:index] + written[index + 1 :] == args[:index] + args[index + 1 :]
    [moved] = server.moved
    assert (moved.place, moved.to, moved.key) == (f"args[{index}]", "env", variable)
    assert variable.startswith("SRV_")
    assert "***" in moved.shown
    assert args[index] not in json.dumps(server.descriptor) + moved.note + moved.shown


def test_what_is_not_a_secret_argument(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    fine = ["--port", "3001", "-p", "8080:80", "--root", "/srv/notes", "--header", "X-Client: cursor",
            "--token-file", "/run/secrets/token", "--tools=all", "@modelcontextprotocol/server-filesystem",
            "https://mcp.example.com/v1/mcp"]  # fmt: skip
    path.write_text(json.dumps({"mcpServers": {"fine": {"command": "srv", "args": fine}}}))
    [server] = planned(home, [(None, path)]).servers
    assert server.descriptor["execution"]["args"] == fine
    assert server.moved == []


@pytest.mark.hostile("client-config")
def test_a_secret_in_a_url_becomes_a_reference(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    servers = {
        "query": {"url": "https://api.example.com/mcp?api_key=abc123&region=eu"},
        "path": {"url": f"https://mcp.example.com/u/{BRAVE_KEY}/mcp"},
        "userinfo": {"url": "https://me:hunter2@mcp.example.com/mcp"},
        "reference": {"command": "srv", "args": ["--key", "${API_KEY}"]},
        "inside": {"command": "srv", "args": ["--key=${API_KEY}"]},
    }
    path.write_text(json.dumps({"mcpServers": servers}))
    result = planned(home, [(None, path)])
    found = {p.app_id: p for p in result.servers}
    shown = {
        "mcp.query": "https://api.example.com/mcp?api_key=***&region=eu",
        "mcp.path": "https://mcp.example.com/u/***/mcp",
        "mcp.userinfo": "https://***@mcp.example.com/mcp",
    }
    for app_id, masked in shown.items():
        server = found[app_id]
        assert server.descriptor["execution"]["url"] == {"$env": f"{app_id.upper()[4:]}_URL"}
        assert server.moved[0].shown == masked
        assert masked in server.descriptor["app"]["description"]
    assert found["mcp.reference"].descriptor["execution"]["args"] == ["--key", {"$env": "API_KEY"}]
    [refused] = result.problems
    assert "'inside'" in refused.where
    assert "${API_KEY}" in refused.message


def test_workspace_and_home_variables_are_resolved(home: Path, project: Path) -> None:
    path = project / ".vscode" / "mcp.json"
    path.parent.mkdir()
    server = {"type": "stdio", "command": "node", "args": ["${workspaceFolder}/server.js", "${userHome}/data"],
              "cwd": "${workspaceFolder}", "env": {"DATA": "${workspaceFolderBasename}"}}  # fmt: skip
    path.write_text(json.dumps({"servers": {"local": server}}))
    [only] = planned(home, [(None, path)]).servers
    assert only.descriptor["execution"] == {
        "type": "mcp",
        "command": "node",
        "args": [f"{project}/server.js", f"{home}/data"],
        "cwd": str(project),
        "env": {"DATA": "shop"},
    }


def test_env_file_values_are_kept_out(home: Path, project: Path) -> None:
    (project / ".env.mcp").write_text("# secrets\nexport DB_URL='postgres://localhost/db'\nREGION=eu\n")
    path = project / ".cursor" / "mcp.json"
    path.parent.mkdir()
    server = {"command": "srv", "envFile": "${workspaceFolder}/.env.mcp", "env": {"REGION": "us"}}
    path.write_text(json.dumps({"mcpServers": {"db": server, "lost": {"command": "x", "envFile": "nope.env"}}}))
    result = planned(home, [(None, path)])
    [db] = result.servers
    assert db.descriptor["execution"]["env"] == {"DB_URL": {"$env": "DB_URL"}, "REGION": "us"}
    assert "its envFile" in result.problems[0].message
    assert "cannot be read: No such file or directory" in result.problems[0].message


def test_an_existing_descriptor_that_differs_is_kept_without_force(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}))
    [fresh] = planned(home, [(None, path)]).servers
    assert fresh.status == "new"
    target = home / ".aai" / "mcp.time" / "aai.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(fresh.descriptor))
    assert planned(home, [(None, path)]).servers[0].status == "unchanged"
    target.write_text(json.dumps({**fresh.descriptor, "version": "2.0.0"}))
    [kept] = planned(home, [(None, path)]).servers
    assert kept.status == "differs"
    assert "--force" in kept.notes[0]
    assert planned(home, [(None, path)], force=True).servers[0].status == "overwrite"


@pytest.mark.parametrize(
    ("key", "value", "secret"),
    [
        ("GITHUB_PERSONAL_ACCESS_TOKEN", "x", True),
        ("OPENAI_API_KEY", "abc", True),
        ("Authorization", "Bearer abc", True),
        ("DB_PASSWORD", "a", True),
        ("client_secret", "a", True),
        ("X-Custom", GITHUB_TOKEN, True),
        ("CONN", "postgres://user:pw@host/db", True),
        ("TOKEN_A", "", False),
        ("LOG_LEVEL", "debug", False),
        ("ROOT", "/home/me/projects/mcp-server-2024/dist", False),
        ("PACKAGE", "@modelcontextprotocol/server-filesystem", False),
        ("REGION", "eu-central-1", False),
        ("RANDOM", "Zq8XkP2mR7tV4wY9aB3c", True),
    ],
)
def test_what_looks_secret(key: str, value: str, secret: bool) -> None:
    assert looks_secret(key, value) is secret


def test_client_entries_match_the_readme_snippets() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    for client, marker in (("claude-desktop", "claude-desktop"), ("vscode", "vscode"), ("codex", "codex")):
        snippet = readme.split(f"<!-- client: {marker} -->\n", 1)[1].split("\n", 1)[1].split("```", 1)[0]
        assert client_entry(client) == snippet

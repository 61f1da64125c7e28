"""`aai-gateway import` as users run it: the installed command, sample files of every client in a
home of its own, gnome-keyring on a private bus for the secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import stdio_session, text_of
from tests.e2e.oauth_env import GnomeKeyring
from tests.import_samples import (
    BRAVE_KEY,
    DB_PASSWORD,
    GITHUB_TOKEN,
    SECRETS,
    SLACK_TOKEN,
    check_shape,
    gateway_validate,
    secrets_in,
    write_all,
    write_codex,
    write_cursor,
)
from tests.mcpservers.servers import hostile
from tests.mcpservers.test_mcp_apps import _free_port, _http_everything
from tests.support import Bus, gateway_command, stop

IMPORTED = {"mcp.filesystem", "mcp.github", "mcp.postgres", "mcp.sentry", "mcp.stripe", "mcp.memory", "mcp.linear",
            "mcp.brave-search", "mcp.perplexity", "mcp.notion", "mcp.context7", "mcp.slack", "mcp.docs"}  # fmt: skip


@pytest.fixture(scope="module")
def keyring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GnomeKeyring]:
    """One gnome-keyring for the module, on a private bus (each test imports under its own app ids' keys)."""
    workdir = tmp_path_factory.mktemp("import-keyring")
    bus = Bus(workdir / "bus")
    try:
        daemon = GnomeKeyring(bus, workdir / "keyring")
        try:
            yield daemon
        finally:
            daemon.stop()
    finally:
        bus.stop()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def project(home: Path) -> Path:
    folder = home / "work" / "shop"
    folder.mkdir(parents=True)
    return folder


def run(home: Path, cwd: Path, *args: str, keyring: GnomeKeyring | None = None) -> subprocess.CompletedProcess[str]:
    """The installed command in `home`, from `cwd`; without `keyring`, on a bus that does not exist."""
    moved = ("XDG_CONFIG_HOME", "CODEX_HOME", "APPDATA", "AAI_HOME", "DBUS_SESSION_BUS_ADDRESS")
    env = {k: v for k, v in os.environ.items() if k not in moved}
    env["HOME"] = str(home)
    env["DBUS_SESSION_BUS_ADDRESS"] = keyring.bus.address if keyring else f"unix:path={home}/no-bus"
    return subprocess.run(
        [gateway_command(), "import", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def descriptors(home: Path) -> dict[str, Any]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((home / ".aai").glob("*/aai.json"))}


def every_file(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_a_dry_run_prints_the_plan_and_writes_nothing(home: Path, project: Path) -> None:
    write_all(home, project)
    done = run(home, project, "--project")
    assert done.returncode == 1, done.stderr  # two entries cannot be imported
    out = done.stdout
    assert "Would write (a dry run; --write writes):" in out
    for app_id in IMPORTED:
        assert f"  {app_id}  {home / '.aai' / app_id / 'aai.json'}  [new]" in out
    assert "from: Claude Desktop (filesystem), Claude Code (filesystem)" in out
    assert "env.GITHUB_PERSONAL_ACCESS_TOKEN → environment variable GITHUB_PERSONAL_ACCESS_TOKEN" in out
    assert "no keyring is usable" in out
    assert "Set these environment variables where the gateway runs" in out
    assert "SENTRY_AUTHORIZATION" in out
    assert "set it to: Bearer $SENTRY_TOKEN" in out
    assert "is aai-gateway itself; left as it is" in out
    assert '[mcp_servers.aai]\n    command = "aai-gateway"\n    args = ["--mcp"]' in out
    assert '"aai": { "type": "stdio", "command": "aai-gateway", "args": ["--mcp"] }' in out
    assert f"in {home / '.codex' / 'config.toml'}, remove context7, slack, docs" in out
    assert f"in {home / '.claude.json'} (project {project}), remove filesystem, stripe" in out
    assert "Nothing was written: run again with --write." in out
    assert "server 'half-written': has neither command nor url" in done.stderr
    assert "server 'legacy': uses the SSE transport" in done.stderr
    assert not [s for s in SECRETS if s in out + done.stderr]
    assert not (home / ".aai").exists()


def test_write_with_environment_references(home: Path, project: Path) -> None:
    write_all(home, project)
    done = run(home, project, "--write", "--secrets", "env", "--json", "--project")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["write"] is True
    assert report["secrets"] == "env"
    assert {s["appId"] for s in report["servers"]} == IMPORTED
    assert {s["status"] for s in report["servers"]} == {"written"}
    written = descriptors(home)
    assert set(written) == IMPORTED
    for folder, descriptor in written.items():
        check_shape(descriptor, folder)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "AAI_PLATFORM": "linux"}
    verdict = gateway_validate([home / ".aai" / folder / "aai.json" for folder in written], env)
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    listed = subprocess.run([gateway_command(), "apps", "--json"], env=env, capture_output=True, text=True, check=False)
    assert {a["appId"] for a in json.loads(listed.stdout)} >= IMPORTED, listed.stderr
    assert written["mcp.slack"]["execution"]["env"] == {
        "SLACK_BOT_TOKEN": {"$env": "SLACK_BOT_TOKEN"},
        "SLACK_TEAM_ID": "T01234567",
    }
    assert written["mcp.github"]["execution"]["env"] == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": {"$env": "GITHUB_PERSONAL_ACCESS_TOKEN"}
    }
    assert not secrets_in(every_file(home / ".aai"))
    assert {v["name"] for v in report["variables"]} >= {"SLACK_BOT_TOKEN", "BRAVE_API_KEY", "DATABASE_CONNECTION"}
    assert (home / ".aai" / "mcp.slack" / "aai.json").stat().st_mode & 0o777 == 0o644

    again = json.loads(run(home, project, "--write", "--secrets", "env", "--json", "--project").stdout)
    assert {s["status"] for s in again["servers"]} == {"unchanged"}


def test_write_with_the_keyring(home: Path, project: Path, keyring: GnomeKeyring) -> None:
    write_all(home, project)
    done = run(home, project, "--write", "--json", "--project", keyring=keyring)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["secrets"] == "keyring"
    written = descriptors(home)
    assert set(written) == IMPORTED
    for folder, descriptor in written.items():
        check_shape(descriptor, folder)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "AAI_PLATFORM": "linux"}
    verdict = gateway_validate([home / ".aai" / folder / "aai.json" for folder in written], env)
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    assert written["mcp.github"]["execution"]["env"] == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": {"$keyring": "mcp.github|GITHUB_PERSONAL_ACCESS_TOKEN"}
    }
    assert written["mcp.linear"]["execution"]["headers"]["Authorization"] == {"$keyring": "mcp.linear|Authorization"}
    # References the client file had stay references: nothing to store for them.
    assert written["mcp.sentry"]["execution"]["headers"] == {"Authorization": {"$env": "SENTRY_AUTHORIZATION"}}
    assert keyring.items("mcp.github|GITHUB_PERSONAL_ACCESS_TOKEN") == [GITHUB_TOKEN]
    assert keyring.items("mcp.slack|SLACK_BOT_TOKEN") == [SLACK_TOKEN]
    assert keyring.items("mcp.postgres|DATABASE_CONNECTION") == [f"postgresql://app:{DB_PASSWORD}@db.internal:5432/app"]
    assert keyring.items("mcp.linear|Authorization")[0].startswith("Bearer lin_api_")
    assert keyring.items("mcp.slack|SLACK_TEAM_ID") == []
    assert not secrets_in(every_file(home / ".aai"))
    assert not (home / ".aai" / "secrets.json").exists()

    # Another key in the client's file: the keyring item is kept until --force.
    cursor = home / ".cursor" / "mcp.json"
    cursor.write_text(cursor.read_text().replace(BRAVE_KEY, "BSAnewKey0000000000000000001"))
    kept = run(home, project, "--write", "--json", str(cursor), keyring=keyring)
    assert kept.returncode == 1
    brave = next(s for s in json.loads(kept.stdout)["servers"] if s["appId"] == "mcp.brave-search")
    assert brave["status"] == "differs"
    assert "the keyring already holds another value for mcp.brave-search|BRAVE_API_KEY" in brave["notes"][0]
    assert keyring.items("mcp.brave-search|BRAVE_API_KEY") == [BRAVE_KEY]
    forced = run(home, project, "--write", "--force", str(cursor), keyring=keyring)
    assert "mcp.brave-search" in forced.stdout
    assert "[overwritten]" in forced.stdout
    assert keyring.items("mcp.brave-search|BRAVE_API_KEY") == ["BSAnewKey0000000000000000001"]
    assert "the old one is kept" not in forced.stdout  # the descriptor itself did not change
    assert not list((home / ".aai" / "mcp.brave-search").glob("*.bak"))


def test_keyring_asked_for_but_absent(home: Path, project: Path) -> None:
    done = run(home, project, "--secrets", "keyring", str(write_codex(home)))
    assert done.returncode == 1
    assert "--secrets keyring: no keyring is usable" in done.stderr
    assert "use --secrets env" in done.stderr


def test_an_existing_descriptor_is_not_overwritten_without_force(home: Path, project: Path) -> None:
    codex = str(write_codex(home))
    assert run(home, project, "--write", codex).returncode == 0
    target = home / ".aai" / "mcp.docs" / "aai.json"
    edited = json.loads(target.read_text())
    edited["app"]["description"] = "Our docs, described by hand."
    target.write_text(json.dumps(edited))
    kept = run(home, project, "--write", codex)
    assert kept.returncode == 1
    assert f"mcp.docs  {target}  [exists and differs: kept (--force replaces it)]" in kept.stdout
    assert "mcp.slack" in kept.stdout
    assert "[unchanged]" in kept.stdout
    assert json.loads(target.read_text()) == edited
    forced = run(home, project, "--write", "--force", codex)
    assert forced.returncode == 0, forced.stderr
    assert f"mcp.docs  {target}  [overwritten]" in forced.stdout
    assert json.loads(target.read_text())["app"]["description"] != edited["app"]["description"]
    assert f"the old one is kept in {target.parent / 'aai.json.bak'}" in forced.stdout
    assert json.loads((target.parent / "aai.json.bak").read_text()) == edited


def test_every_forced_replacement_keeps_the_file_it_replaced(home: Path, project: Path) -> None:
    codex = str(write_codex(home))
    assert run(home, project, "--write", codex).returncode == 0
    target = home / ".aai" / "mcp.docs" / "aai.json"
    kept = []
    for words in ("Our docs, by hand.", "Our docs, by hand again."):
        edited = {**json.loads(target.read_text()), "version": "9.0.0"}
        edited["app"]["description"] = words
        target.write_text(json.dumps(edited))
        kept.append(target.read_bytes())
        forced = run(home, project, "--write", "--force", "--json", codex)
        assert forced.returncode == 0, forced.stderr
        [docs] = [s for s in json.loads(forced.stdout)["servers"] if s["appId"] == "mcp.docs"]
        assert docs["status"] == "overwritten"
        assert docs["backup"] == str(target.parent / ("aai.json.bak" if len(kept) == 1 else "aai.json.1.bak"))
    # `install --force` keeps its copy by the same rule, after those of the import.
    target.write_text(target.read_text().replace("docs.example.com", "docs.example.org"))
    kept.append(target.read_bytes())
    source = home / "docs.json"
    source.write_bytes(kept[0])
    installed = subprocess.run(
        [gateway_command(), "install", "--force", str(source)],
        env={"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    assert f"(the old one is in {target.parent / 'aai.json.2.bak'})" in installed.stdout
    backups = [target.parent / name for name in ("aai.json.bak", "aai.json.1.bak", "aai.json.2.bak")]
    assert [b.read_bytes() for b in backups] == kept


@pytest.mark.hostile("client-config")
@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "huge", "directory"])
def test_an_env_file_that_is_no_small_regular_file_is_refused(home: Path, project: Path, kind: str) -> None:
    if kind == "/dev/zero":
        env_file = Path("/dev/zero")
        why = "is a character device, not a regular file; not read"
    elif kind == "fifo":
        env_file = project / "secrets.fifo"
        os.mkfifo(env_file)  # nothing ever writes to it: reading it would wait forever
        why = "is a named pipe (FIFO), not a regular file; not read"
    elif kind == "huge":
        env_file = project / "huge.env"
        with env_file.open("wb") as out:
            out.truncate(4 * 1024**3)  # 4 GB, sparse
        why = f"is {4 * 1024**3} bytes, over the limit of {1024 * 1024}; not read"
    else:
        env_file = project / "env.d"
        env_file.mkdir()
        why = "is a directory, not a regular file; not read"
    config = project / ".cursor" / "mcp.json"
    config.parent.mkdir()
    servers = {"db": {"command": "srv", "envFile": str(env_file)}, "fine": {"command": "uvx", "args": ["time"]}}
    config.write_text(json.dumps({"mcpServers": servers}))
    done = run(home, project, "--write", "--secrets", "env", str(config))  # the run's timeout bounds a hang
    assert done.returncode == 1
    assert f"{config}: server 'db': its envFile {env_file} {why}" in done.stderr
    assert set(descriptors(home)) == {"mcp.fine"}


@pytest.mark.hostile("client-config")
def test_a_project_file_is_read_only_when_asked(home: Path, project: Path) -> None:
    write_cursor(home)
    planted = project / ".vscode" / "mcp.json"
    planted.parent.mkdir()
    planted.write_text(json.dumps({"servers": {"helper": {"type": "stdio", "command": "sh", "args": ["-c", "id"]}}}))
    done = run(home, project)
    assert done.returncode == 1, done.stderr  # the SSE entry of Cursor's file
    assert f"Cursor          {home / '.cursor' / 'mcp.json'}" in done.stdout
    assert "Not read: the project files of this folder" in done.stdout
    assert f"VS Code         {planted}" in done.stdout.split("Not read:")[1]
    assert "mcp.helper" not in done.stdout
    report = json.loads(run(home, project, "--json").stdout)
    assert report["notRead"] == [{"client": "vscode", "path": str(planted), "why": report["notRead"][0]["why"]}]
    assert "mcp.helper" not in {s["appId"] for s in report["servers"]}
    asked = run(home, project, "--project")
    assert "mcp.helper" in asked.stdout
    assert f"VS Code         {planted}" in asked.stdout
    assert "Not read:" not in asked.stdout


def test_a_broken_file_is_named_and_the_others_still_imported(home: Path, project: Path) -> None:
    broken = project / ".cursor" / "mcp.json"
    broken.parent.mkdir()
    broken.write_text('{\n  "mcpServers": {\n    "x": {"command": npx}\n  }\n}\n')
    bad_toml = project / "config.toml"
    bad_toml.write_text("[mcp_servers.x]\ncommand = npx\n")
    done = run(home, project, "--write", str(broken), str(bad_toml), str(write_cursor(home)))
    assert done.returncode == 1
    assert f"{broken}: invalid JSON at line 3, column 22: Expecting value" in done.stderr
    assert f"{bad_toml}: invalid TOML" in done.stderr
    assert "line 2" in done.stderr
    assert set(descriptors(home)) == {"mcp.linear", "mcp.brave-search"}


def test_nothing_to_import(home: Path, project: Path) -> None:
    done = run(home, project)
    assert done.returncode == 0
    assert "No MCP server list of Claude Desktop, Claude Code, Cursor, VS Code, Codex found" in done.stdout
    unknown = project / "notes.json"
    unknown.write_text('{"title": "not a server list"}')
    refused = run(home, project, str(unknown))
    assert refused.returncode == 1
    assert f"{unknown}: unknown format" in refused.stderr


BEARER = "lin_api_Hd7Qm2Vx9Kp4Rt6Wz8Yb1Nc3"
INLINE = "ghp_Tq4Wm8Zp2Xk6Rv9Ny3Lc7Hb5Jd1Fs0Ga2Ek"
PASSWORD = "Hunter-2-Kx7Qm"
DSN_PASSWORD = "Dsn-Pw-9Qz4Xm"
QUERY_KEY = "qk7Vb2Nm9Xc4Zl8Pw3Rt6Yh1"
PATH_TOKEN = "Zq8XkP2mR7tV4wY9aB3cD5eF6gH"
SLACK = "xoxb-4096-88642-Rk3NpQ7vW2yZ"
AWS = "AKIAQ7XK2MP9RT4VW8YZ"
ARG_SECRETS = (BEARER, INLINE, PASSWORD, DSN_PASSWORD, QUERY_KEY, PATH_TOKEN, SLACK, AWS)
"""Secrets a client's file passes to its servers on the command line or in the URL."""


def hostile_args(plan_file: Path) -> list[str]:
    execution = hostile(plan_file, {"calls": {"echo": [{"argv": True}]}, "argvFile": str(plan_file) + ".argv"})
    return [*execution["args"], "--header", f"Authorization: Bearer {BEARER}", f"--token={INLINE}",
            "-p", PASSWORD, f"postgresql://app:{DSN_PASSWORD}@db.internal/app", f"--endpoint=https://x.example/v1?api_key={QUERY_KEY}",
            f"SLACK_TOKEN={SLACK}", "--id", AWS, "--root", "/srv/notes"]  # fmt: skip


def leaked(text: str) -> list[str]:
    return [s for s in ARG_SECRETS if s in text]


@pytest.mark.hostile("client-config")
@pytest.mark.anyio
@pytest.mark.parametrize("secrets", ["keyring", "env"])
async def test_secrets_on_the_command_line_or_in_a_url_reach_only_the_server(
    home: Path, project: Path, keyring: GnomeKeyring, tmp_path: Path, secrets: str
) -> None:
    args = hostile_args(tmp_path / "plan.json")
    config = home / ".config" / "Claude" / "claude_desktop_config.json"
    config.parent.mkdir(parents=True)
    servers = {"argv": {"command": sys.executable, "args": args},
               "remote": {"url": f"https://mcp.example.com/u/{PATH_TOKEN}/mcp"}}  # fmt: skip
    config.write_text(json.dumps({"mcpServers": servers}))
    dry = run(home, project, "--secrets", secrets, keyring=keyring)
    assert dry.returncode == 0, dry.stderr
    assert not leaked(dry.stdout + dry.stderr)
    assert "--header Authorization: *** --token=*** -p *** postgresql://***@db.internal/app" in dry.stdout
    assert "streamable HTTP: https://mcp.example.com/u/***/mcp" in dry.stdout
    as_json = run(home, project, "--secrets", secrets, "--json", keyring=keyring)
    assert not leaked(as_json.stdout + as_json.stderr)
    done = run(home, project, "--secrets", secrets, "--write", "--json", keyring=keyring)
    assert done.returncode == 0, done.stderr
    assert not leaked(done.stdout + done.stderr)
    assert not [(f, s) for f in every_file(home / ".aai") for s in ARG_SECRETS if s.encode() in f.read_bytes()]
    written = descriptors(home)
    check_shape(written["mcp.argv"], "mcp.argv")
    check_shape(written["mcp.remote"], "mcp.remote")
    moved = {
        s["field"]: s
        for s in next(s for s in json.loads(done.stdout)["servers"] if s["appId"] == "mcp.argv")["secrets"]
    }
    assert set(moved) == {f"args[{i}]" for i in range(len(args)) if any(s in args[i] for s in ARG_SECRETS)}
    gateway_env = {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux",
                   "DBUS_SESSION_BUS_ADDRESS": keyring.bus.address}  # fmt: skip
    if secrets == "keyring":
        assert keyring.items(f"mcp.argv|args[{args.index('--header') + 1}]") == [f"Authorization: Bearer {BEARER}"]
        assert keyring.items("mcp.remote|url") == [f"https://mcp.example.com/u/{PATH_TOKEN}/mcp"]
    else:
        for place, item in moved.items():
            gateway_env[item["key"]] = args[int(place[5:-1])]
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}}))
    async with stdio_session(gateway_env, tmp_path / "gateway.stderr") as session:
        result = await session.call_tool("aai_exec", {"app": "mcp.argv", "tool": "echo", "args": {}})
    assert json.loads((tmp_path / "plan.json.argv").read_text()) == args[2:]  # the server got every value
    assert not leaked(text_of(result))  # and what it says of them reaches the agent masked
    logs = (home / ".aai" / "logs" / "gateway.log").read_text() + (tmp_path / "gateway.stderr").read_text()
    assert "mcp.argv" in logs
    assert not leaked(logs)


@pytest.mark.hostile("client-config")
@pytest.mark.anyio
async def test_a_url_holding_a_key_reaches_its_server_from_the_keyring(
    home: Path, project: Path, keyring: GnomeKeyring, tmp_path: Path
) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp?api_key={QUERY_KEY}"
    config = home / ".cursor" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"mcpServers": {"everything": {"url": url}}}))
    done = run(home, project, "--write", keyring=keyring)
    assert done.returncode == 0, done.stderr
    assert f"streamable HTTP: http://127.0.0.1:{port}/mcp?api_key=***" in done.stdout
    assert not leaked(done.stdout + done.stderr)
    assert descriptors(home)["mcp.everything"]["execution"]["url"] == {"$keyring": "mcp.everything|url"}
    assert keyring.items("mcp.everything|url") == [url]
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}}))
    gateway_env = {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux",
                   "DBUS_SESSION_BUS_ADDRESS": keyring.bus.address}  # fmt: skip
    server = _http_everything(port, tmp_path / "everything.log")
    try:
        async with stdio_session(gateway_env, tmp_path / "gateway.stderr") as session:
            args = {"app": "mcp.everything", "tool": "echo", "args": {"message": "through the keyring"}}
            assert "through the keyring" in text_of(await session.call_tool("aai_exec", args))
    finally:
        stop(server)
    assert not leaked((home / ".aai" / "logs" / "gateway.log").read_text())

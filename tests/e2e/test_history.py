"""The call history for real: the installed gateway records calls over stdio, HTTP and the command line,
`aai-gateway history` reads them back, and killing the gateway mid-load loses nothing it answered."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.config import known_keys
from tests.e2e.mcp_client import error_of, http_session, stdio_session, text_of, web_gateway
from tests.support import TEST_APPS, Bus, committed_calls, gateway_command, install_descriptor, stop

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def home_for(tmp_path: Path, **config: Any) -> Path:
    """A home with the echo app and a config that lets any client call it without a consent prompt."""
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    if "consent.default" in known_keys():
        config.setdefault("consent", {"default": "allow"})
    (home / ".aai" / "config.json").write_text(json.dumps(config))
    return home


def env_for(bus: Bus, home: Path) -> dict[str, str]:
    return bus.env(HOME=str(home), AAI_PLATFORM="linux")


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def history_json(env: dict[str, str], *filters: str) -> list[dict[str, Any]]:
    done = cli(env, "history", "--json", *filters)
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


def exec_args(tool: str, **args: Any) -> dict[str, Any]:
    return {"app": "dev.aai.echo", "tool": tool, "args": args}


async def test_stdio_calls_are_listed_with_the_client_name_and_shown_whole(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    home = home_for(tmp_path)
    env = env_for(bus, home)
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        assert text_of(await session.call_tool("aai_exec", exec_args("echo", text="hello"))) == "hello"
        assert (await error_of(session, "aai_exec", exec_args("echo", txt="x"))).code == -32005
        assert (await error_of(session, "aai_exec", exec_args("fail", message="nope"))).code == -32001

    records = history_json(env)
    assert [(r["tool"], r["status"]) for r in records] == [("fail", "error"), ("echo", "error"), ("echo", "ok")]
    assert {(r["caller"], r["transport"], r["app"]) for r in records} == {("mcp", "stdio", "dev.aai.echo")}
    failed, invalid, ok = records
    assert ok["args"] == {"text": "hello"}
    assert ok["result"] == '"hello"'
    assert ok["error"] is None
    assert invalid["error"]["code"] == -32005
    assert invalid["error"]["type"] == "INVALID_PARAMS"
    assert "text" in invalid["error"]["detail"]
    assert failed["error"]["type"] == "AUTOMATION_FAILED"
    assert "nope" in failed["error"]["detail"]

    assert [r["id"] for r in history_json(env, "--status", "error")] == [failed["id"], invalid["id"]]
    assert [r["id"] for r in history_json(env, "--tool", "echo", "--status", "ok")] == [ok["id"]]
    assert [r["id"] for r in history_json(env, "--caller", "mcp", "--limit", "1")] == [failed["id"]]
    assert history_json(env, "--app", "other.app") == []
    assert len(history_json(env, "--since", "1h", "--until", "2999-01-01")) == 3
    assert history_json(env, "--until", "2000-01-01") == []

    table = cli(env, "history")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["TIME", "(UTC)", "ID", "CALLER", "VIA", "APP:TOOL", "STATUS", "MS"]
    assert ok["id"] in lines[3]
    assert "dev.aai.echo:fail" in lines[1]
    assert "-32001 AUTOMATION_FAILED" in lines[1]

    shown = cli(env, "history", "show", invalid["id"])
    assert shown.returncode == 0, shown.stderr
    assert f"call      {invalid['id']}" in shown.stdout
    assert "caller    mcp over stdio" in shown.stdout
    assert "status    error -32005 INVALID_PARAMS" in shown.stdout
    assert '"txt": "x"' in shown.stdout
    as_json = cli(env, "history", "show", ok["id"], "--json")
    assert json.loads(as_json.stdout) == ok

    # the log line of each call carries the record's id
    log_text = (home / ".aai" / "logs" / "gateway.log").read_text()
    assert f"call {ok['id']} mcp dev.aai.echo:echo ok in" in log_text
    assert f"call {failed['id']} mcp dev.aai.echo:fail failed AUTOMATION_FAILED" in log_text


def test_bad_filters_are_usage_errors_and_unknown_ids_are_reported(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for args in (
        ["--status", "maybe"],
        ["--since", "yesterday"],
        ["--until", "5 parsecs"],
        ["--limit", "0"],
        ["--since", "1h", "--until", "2h"],
    ):
        done = cli(env, "history", *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "Error:" in done.stderr
        assert done.stdout == ""
    empty = cli(env, "history")
    assert (empty.returncode, empty.stdout) == (0, "No calls recorded yet.\n")
    assert not (tmp_path / ".aai" / "history.db").exists(), "reading never creates the database"
    missing = cli(env, "history", "show", "0123456789ab")
    assert missing.returncode == 1
    assert "no call '0123456789ab' in the history" in missing.stderr


async def test_http_and_command_line_calls_are_recorded_with_their_transport(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    home = home_for(tmp_path)
    env = env_for(bus, home)
    with web_gateway(env, tmp_path / "web.log") as url:
        async with http_session(url) as session:
            assert text_of(await session.call_tool("aai_exec", exec_args("add", a=2, b=3))) == "5"
    done = cli(env, "call", "dev.aai.echo", "echo", '{"text": "from the shell"}')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "from the shell\n"
    shell, web = history_json(env)
    assert (web["caller"], web["transport"], web["tool"], web["result"]) == ("mcp", "http", "add", "5")
    assert (shell["caller"], shell["transport"], shell["args"]) == ("cli", "cli", {"text": "from the shell"})


async def test_log_level_comes_from_the_config_and_the_option_overrides_it(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    home = home_for(tmp_path, logLevel="warning")
    env = env_for(bus, home)
    log_file = home / ".aai" / "logs" / "gateway.log"
    async with stdio_session(env, tmp_path / "quiet.log") as session:
        text_of(await session.call_tool("aai_exec", exec_args("echo", text="quiet")))
    async with stdio_session(env, tmp_path / "loud.log", "--log-level", "info") as session:
        text_of(await session.call_tool("aai_exec", exec_args("echo", text="loud")))
    loud, quiet = history_json(env)
    log_text = log_file.read_text()
    assert f"call {quiet['id']}" not in log_text
    assert f"call {quiet['id']}" not in (tmp_path / "quiet.log").read_text()
    assert f"call {loud['id']} mcp dev.aai.echo:echo ok in" in log_text
    assert f"call {loud['id']} mcp dev.aai.echo:echo ok in" in (tmp_path / "loud.log").read_text()


def test_killing_the_gateway_mid_load_keeps_every_answered_call_and_a_sound_database(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    home = home_for(tmp_path)
    calls, kill_after = 400, 120
    with (tmp_path / "stderr.log").open("w") as errlog:
        proc = subprocess.Popen(
            [gateway_command(), "--mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            text=True,
            env=env_for(bus, home),
        )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        initialize = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "kill-test", "version": "0"},
            },
        }
        proc.stdin.write(json.dumps(initialize) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == "init"
        requests: list[dict[str, Any]] = [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
        for i in range(calls):
            # every fourth call fails validation, the rest reach the app
            args = {"txt": f"m{i}"} if i % 4 == 3 else {"text": f"m{i}"}
            requests.append(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "aai_exec", "arguments": exec_args("echo", **args)},
                }
            )
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        answered: dict[int, bool] = {}
        while len(answered) < kill_after:
            message = json.loads(proc.stdout.readline())
            if isinstance(message.get("id"), int):
                answered[message["id"]] = "result" in message and not message["result"].get("isError")
        proc.kill()
        proc.wait(10)
    finally:
        stop(proc)

    database = home / ".aai" / "history.db"
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    recorded = {}
    for row in committed_calls(database):  # committed: in the calls table or in the journal
        assert (row["caller"], row["transport"]) == ("kill-test", "stdio")
        recorded[next(iter(json.loads(row["args"]).values()))] = row["status"]
    for i, succeeded in answered.items():
        assert recorded.get(f"m{i}") == ("ok" if succeeded else "error"), f"call {i} was answered but not recorded"
    assert sum(1 for ok in answered.values() if not ok) >= kill_after // 4 - 1
    assert len(recorded) <= calls

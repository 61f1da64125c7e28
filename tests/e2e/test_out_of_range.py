"""Inputs past what Python's parsers and dates hold: a client's server list nested 100,000 deep, history
filters at the ends of the calendar. Each is one line a person can act on, through the installed command
and the web UI over real HTTP, never a traceback or an HTTP 500."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx2
import pytest

from aai_gateway.web import UI_PATH
from tests.e2e.mcp_client import web_gateway
from tests.support import gateway_command
from tests.web.test_browser import login_url

pytestmark = pytest.mark.e2e

DEPTH = 100_000


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (home / ".aai").mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.hostile("client-config")
@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("claude_desktop_config.json", '{"mcpServers": ' + "[" * DEPTH + "]" * DEPTH + "}"),
        ("config.toml", "[mcp_servers.x]\ncommand = " + "[" * DEPTH + "]" * DEPTH + "\n"),
        ("codex.toml", "x = " + "{a = " * DEPTH + "1" + "}" * DEPTH + "\n"),
        ("digits.json", '{"mcpServers": {"a": {"command": "x", "n": ' + "1" * 5000 + "}}}"),
    ],
    ids=["json-arrays", "toml-arrays", "toml-tables", "json-5000-digits"],
)
def test_import_of_a_file_past_the_parsers_names_it(tmp_path: Path, name: str, text: str) -> None:
    source = tmp_path / name
    source.write_text(text)
    done = cli(tmp_path / "home", "import", str(source))
    assert "Traceback" not in done.stderr
    [line] = [line for line in (done.stdout + done.stderr).splitlines() if str(source) in line]
    assert line.strip().startswith(f"{source}: "), done.stdout + done.stderr
    assert ("nested too deeply to read" if "digits" not in name else "invalid JSON: ") in line


@pytest.mark.hostile("history")
@pytest.mark.parametrize(
    ("args", "notes"),
    [
        (["--until", "0001-01-01"], ["--until '0001-01-01' is taken as 1970-01-01"]),
        (
            ["--since", "0001-01-01", "--until", "9999-12-31"],
            ["--since '0001-01-01' is taken as 1970-01-01", "--until '9999-12-31' is taken as 9999-01-01"],
        ),
        (["--since", "0001-01-01T00:00+05:00"], ["--since '0001-01-01T00:00+05:00' is taken as 1970-01-01"]),
    ],
    ids=["until-year-1", "since-year-1-until-9999", "before-the-first-utc-time"],
)
def test_stats_at_the_ends_of_the_calendar_are_clamped_with_a_note(
    tmp_path: Path, args: list[str], notes: list[str]
) -> None:
    for extra in ([], ["--json"]):
        done = cli(tmp_path / "home", "stats", *args, *extra)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        for note in notes:
            assert f"note: {note}, the " in done.stderr
    assert json.loads(done.stdout)["calls"] == 0


@pytest.mark.hostile("history")
def test_the_insights_page_at_the_ends_of_the_calendar_is_a_page(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True)
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    stderr = tmp_path / "web.log"
    with web_gateway(env, stderr), httpx2.Client(follow_redirects=True, timeout=30) as client:
        login = login_url(stderr)
        assert client.get(login).status_code == 200
        base = login.split(UI_PATH, 1)[0]
        for since, until in (("0001-01-01", "9999-12-31"), ("0001-01-01", "0001-01-01"), ("9999-12-31", "9999-12-31")):
            query = {"range": "custom", "since": since, "until": until}
            page = client.get(f"{base}{UI_PATH}/insights", params=query)
            assert page.status_code == 200, (query, page.text[-500:])
            assert "is taken as" in page.text

"""`aai-gateway serve`, the gateway that stays up: the installed command, reached at /mcp by the SDK's client;
one per AAI home; a stale lock taken over; a signal ends it with status 0, its servers stopped, its history kept."""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.e2e.mcp_client import http_session, listening, text_of
from tests.mcpservers.servers import alive, descriptor, hostile, install, marked
from tests.mcpservers.test_mcp_apps import env_of, exec_
from tests.support import gateway_command, stop, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


def serving(env: dict[str, str], log: Path, *args: str) -> AbstractContextManager[tuple[subprocess.Popen[bytes], str]]:
    """`aai-gateway serve --port 0`, its stderr to `log`; yields the process and the MCP URL it printed."""
    return listening(["serve", "--port", "0", *args], env, log)


def gateway(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def a_home(path: Path) -> dict[str, str]:
    """The environment of a gateway with its own HOME and an AAI home with no apps."""
    (path / ".aai").mkdir(parents=True)
    install(path / ".aai")
    return env_of(path)


def dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    assert not alive(done.pid)
    return done.pid


async def test_serve_answers_at_mcp_and_a_sigterm_ends_it_with_status_0(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    home = tmp_path / "home"
    app = descriptor("mcp.echo", hostile(tmp_path / "plan.json", {"calls": {"echo": [{"echo": True}]}}, mark=mark))
    install(home / ".aai", app)
    env = env_of(home)
    log = tmp_path / "serve.log"
    with serving(env, log) as (proc, url):
        async with http_session(url) as session:
            assert "served" in text_of(await exec_(session, "mcp.echo", "echo", {"word": "served"}))
        (server,) = marked(mark)
        status = gateway(env, "serve", "--status")
        assert status.returncode == 0, status.stderr
        assert status.stdout == f"aai-gateway serve (pid {proc.pid}) is running at {url}; web UI at {url[:-4]}/ui\n"
        assert "login?token=" not in log.read_text()  # a service manager's journal keeps stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0, log.read_text()  # generous: stopping takes about a second
    assert not alive(server)
    assert "serve stopped; its MCP servers are stopped and its history is written" in log.read_text()
    listed = gateway(env, "history", "--json")
    assert [(e["app"], e["tool"], e["status"]) for e in json.loads(listed.stdout)] == [("mcp.echo", "echo", "ok")]
    after = gateway(env, "serve", "--status")
    assert (after.returncode, after.stdout) == (3, "no gateway is serving (aai-gateway serve is not running)\n")


async def test_a_second_serve_on_the_same_home_is_refused_naming_the_first(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = a_home(home)
    with serving(env, tmp_path / "first.log") as (first, url):
        second = gateway(env, "serve", "--port", "0")
        assert second.returncode == 1
        assert second.stderr.startswith(
            f"aai-gateway: a gateway (aai-gateway serve, pid {first.pid}) already serves this AAI home at {url}; "
            f"lock file {home / '.aai' / 'serve.lock'}"
        ), second.stderr
        assert first.poll() is None
        # another AAI home has a serve of its own
        with serving(a_home(tmp_path / "other"), tmp_path / "other.log") as (_, other_url):
            assert other_url != url


def test_a_stale_lock_of_a_dead_pid_is_taken_over_and_sigint_ends_it_with_0(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = a_home(home)
    gone = dead_pid()
    lock = home / ".aai" / "serve.lock"
    lock.write_text(json.dumps({"pid": gone, "url": "http://127.0.0.1:1/mcp", "ui": None}))
    log = tmp_path / "serve.log"
    before = gateway(env, "serve", "--status")
    assert before.returncode == 3, before.stdout
    with serving(env, log) as (proc, url):
        assert f"took over {lock} from pid {gone}, which is no longer running" in log.read_text()
        assert json.loads(lock.read_text()) == {"pid": proc.pid, "url": url, "ui": url[:-4] + "/ui"}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0, log.read_text()
    assert lock.read_text() == ""


def test_web_still_ends_as_the_signal_would(tmp_path: Path) -> None:
    """`--web` is unchanged: it prints the login link, takes no lock and ends by the signal that stopped it."""
    home = tmp_path / "home"
    env = a_home(home)
    log = tmp_path / "web.log"
    with log.open("a") as errlog:
        proc = subprocess.Popen(
            [gateway_command(), "--web", "--port", "0"], stderr=errlog, stdout=subprocess.DEVNULL, env=env
        )
    try:
        wait_until(lambda: "MCP over HTTP at " in log.read_text(), 60, "aai-gateway --web to listen")
        assert "/ui/login?token=" in log.read_text()
        assert gateway(env, "serve", "--status").returncode == 3
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == -signal.SIGTERM
    finally:
        stop(proc)
    assert not (home / ".aai" / "serve.lock").exists()


def test_serve_runs_an_approved_workflow_when_its_trigger_fires(tmp_path: Path) -> None:
    """The triggers run in `serve` (not in `--web` nor stdio): a file change starts the approved workflow."""
    home = tmp_path / "home"
    watched = tmp_path / "inbox"
    watched.mkdir()
    app = descriptor("mcp.echo", hostile(tmp_path / "plan.json", {"calls": {"echo": [{"echo": True}]}}))
    install(home / ".aai", app)
    (home / ".aai" / "workflows").mkdir()
    workflow = {
        "name": "On a new file",
        "on": [{"file": str(watched)}],
        "steps": [{"id": "say", "app": "mcp.echo", "tool": "echo", "args": {"word": "arrived"}}],
    }
    (home / ".aai" / "workflows" / "arrived.json").write_text(json.dumps(workflow))
    env = env_of(home)
    approved = gateway(env, "workflow", "approve", "arrived", "--yes")
    assert approved.returncode == 0, approved.stdout + approved.stderr

    def triggered_runs() -> list[dict[str, object]]:
        listed = json.loads(gateway(env, "history", "--json").stdout)
        return [e for e in listed if e["app"] == "aai.workflows" and e["caller"] == "trigger"]

    with serving(env, tmp_path / "serve.log") as (proc, _):
        wait_until(lambda: "workflow arrived starts on" in (tmp_path / "serve.log").read_text(), 30, "the trigger")
        (watched / "note.txt").write_text("new")
        wait_until(lambda: bool(triggered_runs()), 30, "the triggered run to be recorded")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    (run,) = triggered_runs()
    assert (run["tool"], run["status"]) == ("arrived", "ok"), run

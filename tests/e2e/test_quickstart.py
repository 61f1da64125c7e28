"""`scripts/quickstart` for real, in a home of its own, run twice as a new user would; and its steps one by one.

The whole run (a venv, the package, a private session bus, the notes app, mpv, dunst on a virtual
display when dunst and Xvfb are installed, the HTTP gateway) happens once for the module; every
process it started is stopped afterwards by the pid it recorded.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session, text_of
from tests.support import ROOT, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SCRIPT = ROOT / "scripts" / "quickstart"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
PIDS = ("web", "notes", "mpv", "dunst", "xvfb", "bus")
LIBRARY_APPS = ("org.mpris.mediaplayer2", "org.freedesktop.notifications", "org.freedesktop.dbus")
RULES = [{"app": a, "decision": "allow"} for a in ("dev.aai.notes", *LIBRARY_APPS)]


def piece(body: str, **env: str) -> str:
    """Run `body` in bash after sourcing the script (which then only defines its steps); its stdout."""
    full = {"PATH": SYSTEM_PATH, **env}
    done = subprocess.run(
        ["bash", "-c", f'. "{SCRIPT}"\n{body}'], env=full, capture_output=True, text=True, timeout=30, check=True
    )
    return done.stdout


def test_the_script_parses() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_mpv_gets_the_plugin_only_when_it_would_not_load_it_itself(tmp_path: Path) -> None:
    autoloaded = Path("/etc/mpv/scripts/mpris.so").exists()
    shown = piece("mpris_script_args", HOME=str(tmp_path)).strip()
    assert shown == ("" if autoloaded else "--script=/usr/lib/mpv-mpris/mpris.so")
    scripts = tmp_path / "mpv" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "mpris.so").touch()
    assert piece("mpris_script_args", HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path)) == ""


def test_path_advice_names_the_line_and_the_shell_file(tmp_path: Path) -> None:
    home = str(tmp_path)
    for shell, rc in (("/bin/bash", "~/.bashrc"), ("/usr/bin/zsh", "~/.zshrc"), ("/bin/sh", "~/.profile")):
        advice = piece("path_advice", HOME=home, SHELL=shell)
        assert f"{tmp_path}/.local/bin is not on your PATH" in advice
        assert f"add the\nsame line to {rc} for new shells" in advice
        assert '  export PATH="$HOME/.local/bin:$PATH"\n' in advice
    assert piece('PATH="$HOME/.local/bin:$PATH"; path_advice', HOME=home, SHELL="/bin/bash") == ""


def test_the_recorded_bus_can_be_sourced(tmp_path: Path) -> None:
    address = "unix:path=/tmp/dbus-test,guid=0123"
    shown = piece(
        f'record_session_bus \'{address}\' 42; . "$AAI_DIR/session-bus"; echo "$DBUS_SESSION_BUS_ADDRESS"',
        HOME=str(tmp_path),
    )
    assert shown.strip() == address
    recorded = (tmp_path / ".aai" / "session-bus").read_text()
    assert recorded.endswith(f"export DBUS_SESSION_BUS_ADDRESS='{address}'\nDBUS_SESSION_BUS_PID=42\n")


@dataclass
class Runs:
    home: Path
    run_dir: Path
    first: str
    second: str

    def shell(self) -> dict[str, str]:
        """A new login shell's environment: no DBus address, no display, ~/.local/bin not on PATH."""
        return {"HOME": str(self.home), "PATH": SYSTEM_PATH, "SHELL": "/bin/bash"}

    def command(self) -> str:
        return str(self.home / ".local" / "bin" / "aai-gateway")


def stop_recorded(run_dir: Path) -> None:
    for name in PIDS:
        pidfile = run_dir / f"{name}.pid"
        if not pidfile.exists():
            continue
        try:
            os.kill(int(pidfile.read_text()), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            continue


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    base = tmp_path_factory.mktemp("quickstart")
    home, prefix = base / "home", base / "prefix"
    (home / ".aai").mkdir(parents=True)
    # A config of the user's own: the HTTP gateway on a free port, not 3000, which others may hold.
    (home / ".aai" / "config.json").write_text(json.dumps({"httpPort": 0, "consent": {"rules": RULES}}))
    env = {key: value for key, value in os.environ.items() if key.startswith("PIP_")}
    env.update(HOME=str(home), PATH=SYSTEM_PATH, SHELL="/bin/bash", AAI_PREFIX=str(prefix), LANG="C.UTF-8")
    outputs = []
    try:
        for _ in range(2):
            done = subprocess.run(
                ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=240, check=False
            )
            assert done.returncode == 0, done.stdout + done.stderr
            outputs.append(done.stdout)
        yield Runs(home, prefix / "run", *outputs)
    finally:
        stop_recorded(prefix / "run")


@pytest.mark.timeout(600)
def test_the_first_run_says_how_to_reach_everything(runs: Runs) -> None:
    out = runs.first
    assert "== one call through the gateway: aai-gateway call dev.aai.notes add_note ...\nn1\n" in out
    ui = re.search(
        r"Its web UI \(apps, call history, consent\): open (http://127\.0\.0\.1:\d+/ui/login\?token=(\S+))", out
    )
    assert ui, out
    assert f"(the login token is kept in {runs.home}/.aai/web-token)" in out
    assert f"recorded in {runs.home}/.aai/session-bus: the gateway finds it there" in out
    assert '  export PATH="$HOME/.local/bin:$PATH"' in out
    web_pid = (runs.run_dir / "web.pid").read_text().strip()  # offered, never installed by itself
    assert (
        f"To keep a gateway running for triggers, in place of this one: kill {web_pid} && aai-gateway service install\n"
        in runs.second
    )
    assert not (runs.home / ".config" / "systemd").exists()
    assert "same line to ~/.bashrc for new shells" in out
    assert '"command": "' + runs.command() + '",\n        "args": ["--mcp"]\n' in out
    for app_id in LIBRARY_APPS:  # one app, one id: what the library describes comes from it
        assert f"   {app_id}: installed (aai-gateway install {app_id})\n" in out
    assert "org.freedesktop.dbus): the system bus" not in out  # the session bus entry needs no system bus
    mpv_log = (runs.run_dir / "mpv.log").read_text()
    assert "already exported" not in mpv_log


@pytest.mark.timeout(600)
def test_the_readme_s_install_is_not_refused_after_the_quick_start(runs: Runs) -> None:
    env = runs.shell()
    again = subprocess.run(
        [runs.command(), "install", "org.freedesktop.dbus"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "Session message bus (org.freedesktop.dbus) is already installed with this content" in again.stdout
    listed = subprocess.run(
        [runs.command(), "library", "--json"], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    installed = {e["id"] for e in json.loads(listed.stdout) if e["installed"]}
    assert installed == set(LIBRARY_APPS)
    for app_id in LIBRARY_APPS:
        assert f"   {app_id}: kept your existing {runs.home}/.aai/{app_id}/aai.json\n" in runs.second


@pytest.mark.timeout(600)
def test_the_second_run_adds_no_second_note(runs: Runs) -> None:
    assert 'the example note "Hello" is there from an earlier run, so it is not added again' in runs.second
    assert "add_note" not in runs.second
    token = re.search(r"open http://127\.0\.0\.1:\d+/ui/login\?token=(\S+)\n", runs.second)
    assert token, runs.second
    assert (runs.home / ".aai" / "web-token").read_text().strip() == token.group(1)
    listed = subprocess.run(
        [runs.command(), "call", "dev.aai.notes", "list_notes", '{"tag": "demo"}'],
        env=runs.shell(), capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert [note["title"] for note in json.loads(listed.stdout)] == ["Hello"]


@pytest.mark.timeout(600)
async def test_a_new_shell_reaches_the_apps_without_setting_anything(runs: Runs, tmp_path: Path) -> None:
    env = runs.shell()
    found = subprocess.run(
        [runs.command(), "--discover"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert found.returncode == 0, found.stderr
    assert "dev.aai.Notes  running  [described by dev.aai.notes]" in found.stdout
    assert f"using the session bus recorded in {runs.home}/.aai/session-bus" in found.stderr
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        args = {"app": "dev.aai.notes", "tool": "list_notes", "args": {"tag": "demo"}}
        assert json.loads(text_of(await session.call_tool("aai_exec", args)))[0]["title"] == "Hello"
        if (runs.run_dir / "dunst.pid").exists():  # dunst and Xvfb are installed: dunst runs on a virtual display
            info = {"app": "org.freedesktop.notifications", "tool": "get_server_information", "args": {}}
            assert json.loads(text_of(await session.call_tool("aai_exec", info)))[0] == "dunst"
        volume = {"app": "org.mpris.mediaplayer2", "tool": "volume", "args": {}}
        assert isinstance(json.loads(text_of(await session.call_tool("aai_exec", volume))), int | float)


def test_stopping_what_it_started_leaves_nothing(runs: Runs) -> None:
    pids = [int((runs.run_dir / f"{n}.pid").read_text()) for n in PIDS if (runs.run_dir / f"{n}.pid").exists()]
    assert len(pids) >= 5
    stop_recorded(runs.run_dir)

    def gone() -> bool:
        for pid in pids:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            stat = Path(f"/proc/{pid}/stat")
            if stat.exists() and stat.read_text().rsplit(")", 1)[-1].split()[0] != "Z":
                return False
        return True

    wait_until(gone, 10, "the quick start's processes to stop")

"""`aai-gateway service install | uninstall | status` through the installed command, each in a HOME and
XDG_CONFIG_HOME of its own: the unit systemd itself checks, what is said without a user manager or without
systemd, and, where a systemd user manager can be started (in a mount namespace of its own), the real
enable, start, reach /mcp, stop."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.mcp_client import http_session
from tests.mcpservers.servers import alive, install
from tests.support import FIXED_TOOLS, gateway_command, stop, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

START = "systemctl --user daemon-reload && systemctl --user enable --now aai-gateway.service"


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A HOME, XDG_CONFIG_HOME and AAI home of the test's own, and no user manager to reach."""
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True)
    install(home / ".aai")
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PATH": os.environ["PATH"],
        "AAI_PLATFORM": "linux",
        **extra,
    }


def unit_of(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "systemd" / "user" / "aai-gateway.service"


def gateway(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def verify(unit: Path, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify --user` on the unit (it needs a runtime directory, not a running manager)."""
    runtime = tmp_path / "verify-runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return subprocess.run(
        ["systemd-analyze", "verify", "--user", str(unit)],
        env={**env, "XDG_RUNTIME_DIR": str(runtime)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


needs_systemd = pytest.mark.skipif(
    shutil.which("systemctl") is None or shutil.which("systemd-analyze") is None, reason="systemd is not installed"
)


@needs_systemd
def test_install_no_start_writes_a_unit_systemd_accepts(tmp_path: Path) -> None:
    aai_home = tmp_path / "an AAI home with 100% odd $chars"
    env = environment(tmp_path, AAI_HOME=str(aai_home))
    done = gateway(env, "service", "install", "--no-start")
    assert done.returncode == 0, done.stderr
    unit = unit_of(env)
    assert done.stdout == (
        f"wrote {unit}: ExecStart={gateway_command()} serve\n"
        f"Nothing started (--no-start). To start it now and at each log on: {START}\n"
    )
    text = unit.read_text()
    assert f"\nExecStart={gateway_command()} serve\n" in text
    assert '\nEnvironment="AAI_HOME=' + str(aai_home).replace("%", "%%") + '"\n' in text
    assert "\nRestart=on-failure\n" in text
    assert "\nWantedBy=default.target\n" in text
    checked = verify(unit, tmp_path, env)
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "", "")
    again = gateway(env, "service", "install", "--no-start")
    assert again.stdout.startswith(f"unchanged {unit}: "), again.stdout


@needs_systemd
def test_install_without_a_user_manager_writes_the_unit_and_says_what_to_run(tmp_path: Path) -> None:
    env = environment(tmp_path)
    bus = Path(env["HOME"]) / ".aai" / "session-bus"  # as the quick start records its own bus
    bus.write_text("export DBUS_SESSION_BUS_ADDRESS='unix:path=/nonexistent/bus'\nDBUS_SESSION_BUS_PID=1\n")
    done = gateway(env, "service", "install")
    assert done.returncode == 1
    assert unit_of(env).is_file()
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"note: the service uses the session bus recorded in {bus} ")
    assert "only when the user manager gives it no DBUS_SESSION_BUS_ADDRESS" in lines[0]
    assert lines[1].startswith(
        "aai-gateway: the unit is written, but the systemd user manager did not answer "
        "(systemctl --user daemon-reload: "
    ), lines[1]
    assert lines[1].endswith(f"run: {START}"), lines[1]
    status = gateway(env, "service", "status")
    assert status.returncode == 3
    assert status.stdout == (
        f"unit: installed at {unit_of(env)}; the systemd user manager does not answer\n"
        "no gateway is serving (aai-gateway serve is not running)\n"
    )
    removed = gateway(env, "service", "uninstall")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.startswith(f"Removed {unit_of(env)}. The systemd user manager did not answer")
    assert not unit_of(env).exists()
    again = gateway(env, "service", "uninstall")
    assert again.stdout == f"aai-gateway.service is not installed ({unit_of(env)} does not exist); nothing to remove.\n"
    status = gateway(env, "service", "status")
    assert status.returncode == 3
    assert status.stdout.startswith(f"unit: not installed ({unit_of(env)}); `aai-gateway service install`")


def test_without_systemd_nothing_is_written_and_the_way_is_said(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**environment(tmp_path), "PATH": str(empty)}  # no systemctl to run
    done = gateway(env, "service", "install")
    assert done.returncode == 1
    assert done.stderr.startswith("aai-gateway: this machine has no systemd (systemctl is not on PATH): keep ")
    assert not unit_of(env).parent.exists()
    status = gateway(env, "service", "status")
    assert status.returncode == 3
    assert status.stdout.startswith("unit: none (this machine has no systemd")


# A systemd user manager needs a system booted with systemd (/run/systemd/system): a container has none,
# so the manager runs in a mount namespace of its own where that directory exists, on a tmpfs.
USER_MANAGER = "mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/system && exec systemd --user"


@pytest.fixture
def user_manager(tmp_path: Path) -> Iterator[dict[str, str]]:
    if shutil.which("systemd") is None or shutil.which("unshare") is None:
        pytest.skip("systemd or unshare is not installed")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = environment(tmp_path, XDG_RUNTIME_DIR=str(runtime))
    log = tmp_path / "systemd.log"
    with log.open("w") as out:
        proc = subprocess.Popen(["unshare", "-m", "sh", "-c", USER_MANAGER], env=env, stdout=out, stderr=out)

    def ready() -> bool:
        if proc.poll() is not None:
            return True
        # not is-system-running, which answers "offline" outside the namespace, seeing no /run/systemd/system
        state = subprocess.run(
            ["systemctl", "--user", "show", "-p", "SystemState", "--value"],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        return state.stdout.strip() in ("running", "degraded")

    try:
        wait_until(ready, 30, "the systemd user manager to start")
        if proc.poll() is not None:
            pytest.skip(f"a systemd user manager cannot run here: {log.read_text()[-300:]}")
        yield env
    finally:
        stop(proc, timeout=20)


@needs_systemd
async def test_install_starts_serve_under_a_real_user_manager_and_uninstall_stops_it(
    user_manager: dict[str, str], tmp_path: Path
) -> None:
    aai_home = tmp_path / "an AAI home with 100% odd $chars"  # the unit names it, and the service serves it
    aai_home.mkdir()
    (aai_home / "config.json").write_text('{"httpPort": 0}')
    env = {**user_manager, "AAI_HOME": str(aai_home)}
    done = gateway(env, "service", "install")
    assert done.returncode == 0, done.stdout + done.stderr
    started = done.stdout.splitlines()[-1]
    assert started.startswith("Started aai-gateway.service: aai-gateway serve (pid "), done.stdout
    url = started.split(" is running at ", 1)[1].split(";", 1)[0]
    pid = int(started.split("(pid ", 1)[1].split(")", 1)[0])
    async with http_session(url) as session:
        listed = await session.list_tools()
        assert [t.name for t in listed.tools] == FIXED_TOOLS
    status = gateway(env, "service", "status")
    assert status.returncode == 0, status.stdout
    assert status.stdout.splitlines()[0] == f"unit: installed at {unit_of(env)}, enabled, active"
    assert f"aai-gateway serve (pid {pid}) is running at {url}" in status.stdout
    assert f'"pid": {pid}' in (aai_home / "serve.lock").read_text()
    second = gateway(env, "serve", "--port", "0")
    assert second.returncode == 1
    assert f"pid {pid}" in second.stderr
    removed = gateway(env, "service", "uninstall")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert removed.stdout == f"Stopped and disabled aai-gateway.service; removed {unit_of(env)}.\n"
    assert not alive(pid)
    shown = subprocess.run(
        ["systemctl", "--user", "show", "-p", "Result", "-p", "ExecMainStatus", "aai-gateway.service"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert shown.stdout == "Result=success\nExecMainStatus=0\n"  # SIGTERM ended it with status 0
    after = gateway(env, "service", "status")
    assert after.returncode == 3

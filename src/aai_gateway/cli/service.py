"""`aai-gateway service install | uninstall | status`: `serve` as a systemd user service.

Nothing starts unless the user runs `install`; where no systemd user manager answers (a container, a
machine without systemd), the unit is written all the same and the commands to run are printed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from aai_gateway import paths
from aai_gateway.cli.common import fail, settings_of
from aai_gateway.cli.running import Running, running
from aai_gateway.cli.serve import NOT_RUNNING, describe
from aai_gateway.config import Settings
from aai_gateway.session_bus import ADDRESS_VARIABLE

UNIT = "aai-gateway.service"
SYSTEMCTL_TIMEOUT = 30
START_WAIT = 20
"""Seconds `install` waits for the started gateway to say where it listens."""


def unit_file(env: Mapping[str, str]) -> Path:
    """`$XDG_CONFIG_HOME/systemd/user/aai-gateway.service`, else under `~/.config`, where the user manager looks."""
    base = env.get("XDG_CONFIG_HOME")
    return (Path(base) if base else paths.home(env) / ".config") / "systemd" / "user" / UNIT


def elsewhere(platform: str) -> str:
    """What to do where there is no systemd."""
    if platform == "darwin":
        return (
            "macOS has no systemd: keep `aai-gateway serve` running with launchd, a LaunchAgent plist in "
            "~/Library/LaunchAgents whose ProgramArguments are the aai-gateway path and serve, with KeepAlive true "
            "(then `launchctl load` it)"
        )
    if platform.startswith("win"):
        return (
            "Windows has no systemd: keep `aai-gateway serve` running with Task Scheduler, a task run at log on "
            '(`schtasks /Create /SC ONLOGON /TN aai-gateway /TR "<path of aai-gateway.exe> serve"`)'
        )
    return (
        "this machine has no systemd (systemctl is not on PATH): keep `aai-gateway serve` running with the "
        "service manager it has, started at log on and restarted when it fails"
    )


def quoted(word: str, *, command: bool = True) -> str:
    """`word` as one argument of a systemd command line (or, not `command`, one Environment= assignment):
    specifiers (%) and, on a command line, variables ($) kept literal. ValueError for a control character
    (a newline would start a line of its own in the unit)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in word):
        raise ValueError(f"{word!r} holds a control character, which a systemd unit cannot hold")
    word = word.replace("%", "%%")
    if command:  # Environment= expands no variables
        word = word.replace("$", "$$")
    if word and not any(c.isspace() or c in "\"'\\;" for c in word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def unit_text(command: Sequence[str], environment: Mapping[str, str]) -> str:
    lines = [
        "# Written by `aai-gateway service install`; `aai-gateway service uninstall` removes it.",
        "[Unit]",
        "Description=aai-gateway: MCP over HTTP, the web UI, and saved workflows run by their triggers",
        "",
        "[Service]",
        "Type=simple",
        "ExecStart=" + " ".join(quoted(word) for word in command),
        *(f"Environment={quoted(f'{name}={value}', command=False)}" for name, value in environment.items()),
        "Restart=on-failure",
        "RestartSec=5",
        # SIGTERM to the gateway alone: it stops the MCP servers it started (stdin closed, then SIGTERM) itself.
        "KillMode=mixed",
        "TimeoutStopSec=20",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def executable() -> str:
    """The absolute path of the `aai-gateway` command running now."""
    here = Path(sys.argv[0])
    if here.name.startswith("aai-gateway"):
        found = shutil.which(str(here)) if here.parent == Path() else str(here)
        if found:
            return str(Path(found).absolute())
    beside = Path(sys.executable).parent / ("aai-gateway.exe" if sys.platform == "win32" else "aai-gateway")
    if beside.exists():
        return str(beside)
    found = shutil.which("aai-gateway")
    if found is None:
        fail("cannot find the installed aai-gateway command to put in the unit; is it installed?", 1)
    return str(Path(found).absolute())


def command_of(ctx: click.Context, settings: Settings) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of the unit: this same AAI home and config file."""
    command = [executable()]
    config = ctx.ensure_object(dict).get("config")
    if config is not None:
        command += ["--config", str(Path(config).absolute())]
    command.append("serve")
    environment = {}
    if paths.environ().get("AAI_HOME"):
        environment["AAI_HOME"] = str(settings.aai_home.absolute())
    return command, environment


@dataclass(frozen=True, slots=True)
class Done:
    ok: bool
    out: str


def systemctl(*args: str) -> Done:
    try:
        done = subprocess.run(
            ["systemctl", "--user", *args], capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Done(False, str(exc))
    said = (done.stdout.strip() + "\n" + done.stderr.strip()).strip()
    return Done(done.returncode == 0, " ".join(said.split()))


def no_systemd() -> str | None:
    """Why this machine has no systemd to run the service, or None."""
    if not sys.platform.startswith("linux") or shutil.which("systemctl") is None:
        return elsewhere(sys.platform)
    return None


def bus_note(settings: Settings) -> None:
    """The service's session bus is the user manager's, not the quick start's private one: say so."""
    recorded = settings.session_bus
    if recorded is None:
        return
    manager = systemctl("show-environment")
    if not manager.ok:
        said = (
            f"uses {recorded.describe()} (which the quick start started) only when the user manager gives it no "
            f"{ADDRESS_VARIABLE}; with dbus-user-session installed it gets the user manager's bus instead"
        )
    elif f"{ADDRESS_VARIABLE}=" in manager.out:
        said = (
            f"uses the session bus of the systemd user manager, not {recorded.describe()}, which the quick start "
            "started: apps on that bus are not reached by the service"
        )
    else:
        said = (
            f"gets no {ADDRESS_VARIABLE} from the user manager, so it uses {recorded.describe()} while that bus "
            "runs (the quick start started it; it is gone after a restart)"
        )
    click.echo(f"note: the service {said}", err=True)


@click.group(short_help="Run `aai-gateway serve` as a systemd user service: install, uninstall, status.")
def service() -> None:
    """Keep a gateway running (`aai-gateway serve`: MCP over HTTP, the web UI, and the saved workflows
    its triggers start) as a systemd user service, ~/.config/systemd/user/aai-gateway.service."""


@service.command(short_help="Write the systemd user unit of `aai-gateway serve`, enable and start it.")
@click.option("--no-start", is_flag=True, help="Only write the unit; enable and start nothing.")
@click.pass_context
def install(ctx: click.Context, no_start: bool) -> None:
    """Write ~/.config/systemd/user/aai-gateway.service (the absolute path of this aai-gateway, `serve`,
    restarted when it fails), then `systemctl --user daemon-reload` and `enable --now` it.

    Without a systemd user manager (a container), the unit is still written and the commands to run
    are printed; exit 1. Without systemd at all (macOS, Windows), says what to use instead; exit 1.
    """
    why = no_systemd()
    if why is not None:
        fail(why, 1)
    settings = settings_of(ctx)
    command, environment = command_of(ctx, settings)
    env = paths.environ()
    path = unit_file(env)
    try:
        text = unit_text(command, environment)
    except ValueError as exc:
        fail(f"cannot write the unit: {exc}", 1)
    try:
        before = path.read_text("utf-8") if path.exists() else None
        path.parent.mkdir(parents=True, exist_ok=True)
        paths.write_atomic(path, text.encode())
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}", 1)
    said = "unchanged" if before == text else ("updated" if before is not None else "wrote")
    click.echo(f"{said} {path}: ExecStart={' '.join(command)}")
    start = "systemctl --user daemon-reload && systemctl --user enable --now aai-gateway.service"
    bus_note(settings)
    if no_start:
        click.echo(f"Nothing started (--no-start). To start it now and at each log on: {start}")
        return
    reload = systemctl("daemon-reload")
    if not reload.ok:
        fail(
            f"the unit is written, but the systemd user manager did not answer (systemctl --user daemon-reload: "
            f"{reload.out or 'failed'}); this happens in a container or a session without one. "
            f"Where a user manager runs (a desktop or ssh log on, or `loginctl enable-linger $USER`), run: {start}",
            1,
        )
    other = running(settings.aai_home)
    if other is not None:
        enabled = systemctl("enable", UNIT)
        fail(
            f"{describe(other)} outside the service, so the service was "
            f"{'enabled' if enabled.ok else 'not enabled'} but not started: stop pid {other.pid}, then run "
            "systemctl --user start aai-gateway.service",
            1,
        )
    started = systemctl("enable", "--now", UNIT)
    if not started.ok:
        fail(f"systemctl --user enable --now {UNIT} failed: {started.out}; see journalctl --user -u {UNIT}", 1)
    found = _announced(settings)
    if found is None:
        state = systemctl("is-active", UNIT)
        if not state.ok:
            fail(f"{UNIT} did not stay up ({state.out or 'inactive'}); see journalctl --user -u {UNIT}", 1)
        click.echo(f"Started {UNIT}; it has not said where it listens yet: see journalctl --user -u {UNIT}")
        return
    click.echo(f"Started {UNIT}: {describe(found)}. It starts again at each log on.")


def _announced(settings: Settings) -> Running | None:
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline:
        found = running(settings.aai_home)
        if found is not None and found.url is not None:
            return found
        if not systemctl("is-active", "--quiet", UNIT).ok and systemctl("is-failed", "--quiet", UNIT).ok:
            return None
        time.sleep(0.2)
    return None


@service.command(short_help="Stop, disable and remove the systemd user unit of `aai-gateway serve`.")
def uninstall() -> None:
    """Stop and disable the service (`systemctl --user disable --now`) and remove its unit file."""
    why = no_systemd()
    if why is not None:
        fail(why, 1)
    path = unit_file(paths.environ())
    if not path.exists():
        click.echo(f"{UNIT} is not installed ({path} does not exist); nothing to remove.")
        return
    stopped = systemctl("disable", "--now", UNIT)
    try:
        path.unlink()
    except OSError as exc:
        fail(f"cannot remove {path}: {exc.strerror or exc}", 1)
    if stopped.ok:
        systemctl("daemon-reload")
        click.echo(f"Stopped and disabled {UNIT}; removed {path}.")
        return
    click.echo(
        f"Removed {path}. The systemd user manager did not answer ({stopped.out or 'systemctl --user failed'}), "
        "so nothing was stopped; where one runs: systemctl --user disable --now aai-gateway.service",
    )


@service.command(short_help="Whether the service is installed, enabled and active, and where it listens.")
@click.pass_context
def status(ctx: click.Context) -> None:
    """Whether the unit is installed, enabled and active, and the running serve's URL and pid.
    Exit 0 when a serve runs on this AAI home, 3 when none does (as systemctl status)."""
    settings = settings_of(ctx)
    path = unit_file(paths.environ())
    why = no_systemd()
    if why is not None:
        click.echo(f"unit: none ({why})")
    elif not path.exists():
        click.echo(f"unit: not installed ({path}); `aai-gateway service install` installs it")
    else:
        enabled, active = systemctl("is-enabled", UNIT), systemctl("is-active", UNIT)
        if not enabled.ok and not active.ok and not systemctl("show-environment").ok:
            click.echo(f"unit: installed at {path}; the systemd user manager does not answer")
        else:
            click.echo(f"unit: installed at {path}, {enabled.out or 'unknown'}, {active.out or 'unknown'}")
    found = running(settings.aai_home)
    click.echo(describe(found))
    sys.exit(0 if found is not None else NOT_RUNNING)

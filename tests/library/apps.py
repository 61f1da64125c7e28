"""Real desktop apps for the library's run-level tests: their environment on a private bus and display,
started until they own their bus names, run unprivileged where they refuse root."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.support import Bus, stop, wait_until


def desktop_env(bus: Bus, home: Path, display: str | None = None, **extra: str) -> dict[str, str]:
    """An app's environment: the private bus and display, and a fresh home of its own (no user settings)."""
    home.mkdir(parents=True, exist_ok=True)
    env = bus.env(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_RUNTIME_DIR=str(home / "runtime"),
        NO_AT_BRIDGE="1",
        GTK_A11Y="none",
        **extra,
    )
    (home / "runtime").mkdir(mode=0o700, exist_ok=True)
    for name in ("WAYLAND_DISPLAY", "XDG_CURRENT_DESKTOP", "XDG_SESSION_TYPE", "SESSION_MANAGER"):
        env.pop(name, None)
    if display:
        env["DISPLAY"] = display
    return env


@contextmanager
def started(
    argv: Sequence[str], env: Mapping[str, str], log: Path, bus: Bus, names: Sequence[str], *, timeout: float = 30
) -> Iterator[subprocess.Popen[bytes]]:
    """Start a real app and wait until it owns every bus name in `names`; stopped by its process id after."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            list(argv), env=dict(env), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    try:

        def serving() -> bool:
            assert proc.poll() is None, f"{argv[0]} exited with {proc.returncode}: {log.read_text()[-2000:]}"
            return all(bus.has_owner(name) for name in names)

        wait_until(serving, timeout, f"{argv[0]} to own {', '.join(names)}")
        yield proc
    finally:
        stop(proc)


def as_unprivileged(argv: Sequence[str], home: Path) -> list[str]:
    """`argv` run as user nobody when the tests run as root (VLC refuses root); as is otherwise."""
    if os.geteuid() != 0:
        return list(argv)
    nobody = pwd.getpwnam("nobody")
    for path in (home, *home.rglob("*")):
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to run an app as nobody"
    return [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups", *argv]

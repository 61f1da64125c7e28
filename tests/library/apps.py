"""Running library entries against real apps: a private X display, apps started on a private bus, and the
installed gateway with library descriptors installed, driven by the MCP SDK client through `aai_exec`."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession

from tests.e2e.mcp_client import error_of, text_of
from tests.support import ROOT, Bus, install_descriptor, stop, wait_until

LIBRARY = ROOT / "src" / "aai_gateway" / "library" / "apps"


def entry(app_id: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((LIBRARY / app_id / "entry.json").read_text())
    return loaded


def gateway_env(bus: Bus, home: Path, *app_ids: str, **extra: str) -> dict[str, str]:
    """An AAI home with the library's `app_ids` installed, and the gateway's environment on `bus`."""
    for app_id in app_ids:
        install_descriptor(home / ".aai", LIBRARY / app_id / "aai.json")
    return {"HOME": str(home), "DBUS_SESSION_BUS_ADDRESS": bus.address, "AAI_PLATFORM": "linux", **extra}


class Exec:
    """`aai_exec` of one app in a session: results parsed from JSON text, errors as (type, detail)."""

    def __init__(self, session: ClientSession, app: str) -> None:
        self.session = session
        self.app = app

    async def __call__(self, tool: str, **args: Any) -> Any:
        result = await self.session.call_tool("aai_exec", {"app": self.app, "tool": tool, "args": args})
        text = text_of(result)
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text

    async def error(self, tool: str, **args: Any) -> tuple[str, str]:
        error = await error_of(self.session, "aai_exec", {"app": self.app, "tool": tool, "args": args})
        assert isinstance(error.data, dict), error
        return error.data["type"], error.data["detail"]

    async def tools(self) -> list[str]:
        """The tools the app's guide lists (`### name` headings)."""
        guide = text_of(await self.session.call_tool("app_" + self.app.replace(".", "_"), {}))
        return [line[4:] for line in guide.splitlines() if line.startswith("### ")]


def read_only_tools(app_id: str) -> list[str]:
    doc = json.loads((LIBRARY / app_id / "aai.json").read_text())
    return [t["name"] for t in doc["tools"] if (t.get("annotations") or {}).get("readOnlyHint")]


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

"""Real processes for tests: a private DBus session bus, apps on it, and the installed gateway.

Every process is started here and stopped by its process id; readiness is awaited by reading a
line or polling the real condition, never by sleeping a fixed time.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import wave
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TEST_APPS = ROOT / "tests" / "apps"
FIXED_TOOLS = ["aai_search", "aai_install", "aai_exec", "aai_batch", "aai_run", "aai_wait", "web_discover"]
"""The gateway's fixed tools in the strict spelling, in the order they are listed (before the apps)."""

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={socket_dir}</listen>
  <auth>EXTERNAL</auth>
  {service_dirs}
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def gateway_command() -> str:
    """The installed `aai-gateway` console script of the environment running the tests."""
    beside = Path(sys.executable).parent / "aai-gateway"
    found = str(beside) if beside.exists() else shutil.which("aai-gateway")
    assert found, "aai-gateway is not installed in this environment"
    return found


def stop(proc: subprocess.Popen[Any], timeout: float = 5) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
    for stream in (proc.stdout, proc.stderr, proc.stdin):
        if stream is not None:
            stream.close()


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise TimeoutError(f"no output from {proc.args!r} within {timeout} s")
    return proc.stdout.readline().strip()


def wait_until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.005
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout} s")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


async def until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """`wait_until` for async tests: `condition` runs in a worker thread, so the event loop goes on meanwhile."""
    delay = 0.005
    with anyio.move_on_after(timeout):
        while not await anyio.to_thread.run_sync(condition):
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.1)
        return
    raise TimeoutError(f"{what} did not happen within {timeout} s")


async def until_echo_called(bus: Bus, past: int, name: str = "dev.aai.Echo") -> None:
    """Until the echo app owning `name` has received more than `past` calls: the next call is running in it."""
    await until(lambda: bus.echo_calls(name) > past, 20, f"call {past + 1} reaching {name}")


class Bus:
    """A private `dbus-daemon --session`; `service_dirs` enables activation of installed services."""

    def __init__(
        self,
        workdir: Path,
        service_dirs: Sequence[Path] = (),
        *,
        fixed_socket: bool = False,
        kind: str = "session",
        any_user: bool = False,
    ) -> None:
        """`fixed_socket` listens on `workdir/bus` so that a restarted bus has the same address;
        `kind` "system" makes a bus of the system type (reached through DBUS_SYSTEM_BUS_ADDRESS);
        `any_user` lets processes of other users connect (an app that refuses to run as root)."""
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        config = workdir / "session.conf"
        dirs = "\n  ".join(f"<servicedir>{d}</servicedir>" for d in service_dirs)
        text = BUS_CONFIG.format(socket_dir=workdir, service_dirs=dirs).replace(
            "<type>session</type>", f"<type>{kind}</type>"
        )
        if kind == "system" or any_user:  # a system bus takes connections from every user (daemons drop to their own)
            text = text.replace('<allow own="*"/>', '<allow own="*"/>\n    <allow user="*"/>')
        if fixed_socket:
            (workdir / "bus").unlink(missing_ok=True)
            text = text.replace(f"<listen>unix:dir={workdir}</listen>", f"<listen>unix:path={workdir / 'bus'}</listen>")
        config.write_text(text)
        self.proc: subprocess.Popen[str] = subprocess.Popen(
            ["dbus-daemon", f"--config-file={config}", "--print-address=1", "--nofork"],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.address = read_line(self.proc, 10)
        assert self.address.startswith("unix:"), self.address

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(DBUS_SESSION_BUS_ADDRESS=self.address, **extra)
        env.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
        return env

    def ask_bus(self, member: str, name: str) -> str:
        """Call one org.freedesktop.DBus method taking a name; its reply as dbus-send prints it."""
        result = subprocess.run(
            [
                "dbus-send",
                f"--bus={self.address}",
                "--print-reply",
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                f"org.freedesktop.DBus.{member}",
                f"string:{name}",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout

    def has_owner(self, name: str) -> bool:
        return "boolean true" in self.ask_bus("NameHasOwner", name)

    def owner_pid(self, name: str) -> int | None:
        """The process id of the connection owning `name`, if any."""
        if not self.has_owner(name):
            return None
        return int(self.ask_bus("GetConnectionUnixProcessID", name).split()[-1])

    def echo_calls(self, name: str = "dev.aai.Echo") -> int:
        """How many calls the echo app owning `name` has received (its `Calls` method, asked directly)."""
        result = subprocess.run(
            [
                "dbus-send",
                f"--bus={self.address}",
                "--print-reply",
                f"--dest={name}",
                "/dev/aai/Echo",
                "dev.aai.Echo.Calls",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return int(result.stdout.split()[-1])

    def stop(self) -> None:
        stop(self.proc)


def start_app(argv: Sequence[str], env: Mapping[str, str], timeout: float = 15) -> subprocess.Popen[str]:
    """Start one of our own DBus apps and wait for its `ready` line."""
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, env=dict(env), text=True)
    try:
        line = read_line(proc, timeout)
    except TimeoutError:
        stop(proc)
        raise
    assert line == "ready", f"{argv[-1]} printed {line!r} instead of ready"
    return proc


@contextmanager
def running(proc: subprocess.Popen[Any]) -> Iterator[subprocess.Popen[Any]]:
    try:
        yield proc
    finally:
        stop(proc)


def install_descriptor(aai_home: Path, source: Path) -> Path:
    """Copy `<appId>/aai.json` from the examples or test apps into an AAI home."""
    app_dir = aai_home / source.parent.name
    app_dir.mkdir(parents=True, exist_ok=True)
    target = app_dir / "aai.json"
    shutil.copyfile(source, target)
    return target


def echo_home(home: Path, caller: str | None, **config: Any) -> None:
    """An AAI home with the echo app installed, `caller` (if any) allowed to use it, and more config keys."""
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    rules = [{"caller": caller, "app": "dev.aai.echo", "decision": "allow"}] if caller else []
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"rules": rules}, **config}))


class Mpv:
    """mpv on the private bus with its MPRIS plugin, plus a client for its own JSON IPC socket."""

    PLUGIN = Path("/usr/lib/mpv-mpris/mpris.so")

    def __init__(self, bus: Bus, workdir: Path) -> None:
        self.socket_path = workdir / "mpv.sock"
        self.proc: subprocess.Popen[bytes] = subprocess.Popen(
            [
                "mpv",
                "--idle=yes",
                "--no-video",
                "--ao=null",
                "--no-config",  # also keeps mpv from loading /etc/mpv/scripts, so the plugin loads once
                "--no-terminal",
                f"--script={self.PLUGIN}",
                f"--input-ipc-server={self.socket_path}",
            ],
            env=bus.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: bus.has_owner("org.mpris.MediaPlayer2.mpv") and self.socket_path.exists(), 20, "mpv start")

    def command(self, *command: Any) -> Any:
        """Send one IPC command and return its `data`; events on the socket are skipped."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(str(self.socket_path))
            sock.sendall(json.dumps({"command": list(command), "request_id": 1}).encode() + b"\n")
            buffer = b""
            while True:
                chunk = sock.recv(65536)
                assert chunk, "mpv closed its IPC socket"
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    reply = json.loads(line)
                    if reply.get("request_id") == 1:
                        if reply["error"] == "property unavailable":
                            return None
                        assert reply["error"] == "success", reply
                        return reply.get("data")

    def property(self, name: str) -> Any:
        """A property's value, or None while mpv has none (e.g. `path` before a file loads)."""
        return self.command("get_property", name)

    def stop(self) -> None:
        stop(self.proc)


def silent_wav(path: Path, seconds: int = 30) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(8000)
        out.writeframes(b"\x80" * 8000 * seconds)
    return path


@contextmanager
def served(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` answering on a free local port, in threads; yields the server's base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def committed_calls(database: Path) -> list[dict[str, Any]]:
    """Every call record committed to the history at `database`, read without the gateway's code: the calls
    table, the journal file beside it (JSON lines of calls-table rows, history/journal.py) and the files a
    mover claimed from it, and schema 5's journal table; in the order of their time."""
    import sqlite3  # noqa: PLC0415 - only the history tests read it

    rows: list[dict[str, Any]] = []
    with sqlite3.connect(database) as conn:
        conn.row_factory = sqlite3.Row
        columns = [row[1] for row in conn.execute("PRAGMA table_info(calls)") if row[1] != "seq"]
        for table in ("calls", "calls_journal"):
            rows += [{k: row[k] for k in columns} for row in conn.execute(f"SELECT * FROM {table}")]  # noqa: S608
    journal = database.with_suffix(".journal")
    claimed = journal.with_name(journal.name + ".d")
    for file in [journal, *(sorted(claimed.iterdir()) if claimed.is_dir() else [])]:
        if file.exists():
            lines = [line for line in file.read_bytes().split(b"\n") if line.strip()]
            rows += [dict(zip(columns, json.loads(line), strict=True)) for line in lines]
    return sorted(rows, key=lambda row: row["time"])

"""The DBus session bus the quick start started, for runs where DBUS_SESSION_BUS_ADDRESS is unset.

On a machine without a desktop session, `scripts/quickstart` starts a `dbus-daemon --session` of its
own and records it in the AAI home (`~/.aai/session-bus`) in the form `dbus-launch` uses, which a
shell can also source:

    export DBUS_SESSION_BUS_ADDRESS='unix:path=/tmp/dbus-AbCd,guid=...'
    DBUS_SESSION_BUS_PID=1234

A gateway started without the variable (a new shell, an agent's config without `env`) uses that bus
when its daemon is still running and its socket accepts a connection. The variable, when set,
always wins. Also the words that tell a person what to do when no bus can be reached.
"""

from __future__ import annotations

import shlex
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from aai_gateway import paths
from aai_gateway.processes import alive

ADDRESS_VARIABLE = "DBUS_SESSION_BUS_ADDRESS"
PID_VARIABLE = "DBUS_SESSION_BUS_PID"
SYSTEM_ADDRESS_VARIABLE = "DBUS_SYSTEM_BUS_ADDRESS"
SYSTEM_SOCKET = "/run/dbus/system_bus_socket"
CONNECT_TIMEOUT = 0.5


@dataclass(frozen=True, slots=True)
class RecordedBus:
    """The bus written down in `file`; `problem` says why it cannot be used, or is None when it can."""

    file: Path
    address: str | None
    pid: int | None
    problem: str | None = None

    @property
    def usable(self) -> bool:
        return self.problem is None and self.address is not None

    def describe(self) -> str:
        pid = f", pid {self.pid}" if self.pid else ""
        return f"the session bus recorded in {self.file} ({self.address}{pid})"


def recorded(env: Mapping[str, str]) -> RecordedBus | None:
    """The recorded bus when `env` names no session bus and a record exists; None otherwise."""
    if env.get(ADDRESS_VARIABLE):
        return None
    file = paths.session_bus_file(env)
    try:
        text = file.read_text("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        return RecordedBus(file, None, None, f"cannot be read: {exc}")
    values = parse(text)
    address = values.get(ADDRESS_VARIABLE) or None
    pid_text = values.get(PID_VARIABLE, "")
    pid = int(pid_text) if pid_text.isdigit() else None
    if address is None:
        return RecordedBus(file, None, pid, f"names no {ADDRESS_VARIABLE}")
    return RecordedBus(file, address, pid, _unreachable(address, pid))


def parse(text: str) -> dict[str, str]:
    """`NAME=value` lines as a shell reads them (`export`, quotes and comments allowed); others skipped."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)  # `A='x'; export A` as dbus-launch writes
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:
            continue
        for word in words:
            name, equals, value = word.partition("=")
            if equals and name.isidentifier():
                values[name] = value
    return values


def _unreachable(address: str, pid: int | None) -> str | None:
    """Why nobody answers at `address` (its daemon `pid` is gone, its socket refuses), or None."""
    if pid is not None and not alive(pid):
        return f"is no longer running (its pid {pid} is gone)"
    where = unix_socket(address)
    if where is None:
        return None  # not a Unix socket (tcp:, launchd:): the daemon's pid is all there is to check
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            sock.connect(where)
        except OSError as exc:
            return f"does not accept connections ({exc.strerror or exc})"
    return None


def unix_socket(address: str) -> str | None:
    """The socket of the first `unix:path=` or `unix:abstract=` entry of a DBus address, if any."""
    for entry in address.split(";"):
        transport, _, options = entry.partition(":")
        if transport != "unix":
            continue
        for option in options.split(","):
            key, _, value = option.partition("=")
            if key == "path":
                return unquote(value)
            if key == "abstract":
                return "\0" + unquote(value)
    return None


def connect_problem(
    kind: str, error: BaseException, env: Mapping[str, str], bus: RecordedBus | None, record: Path
) -> str:
    """Why the `kind` bus cannot be reached and what to do about it, in one line for a person.

    `env` is the environment the connection was made in, `bus` what the quick start recorded in the
    file `record`, if anything."""
    if kind == "system":
        address = env.get(SYSTEM_ADDRESS_VARIABLE)
        where = unix_socket(address) if address else SYSTEM_SOCKET
        if isinstance(error, FileNotFoundError | ConnectionRefusedError) and where and not where.startswith("\0"):
            return (
                f"cannot connect to the DBus system bus: it is not running here (no {where}); start it "
                "(`sudo service dbus start`; in a container, `sudo dbus-daemon --system --fork`), or remove "
                "the descriptor of the app that uses it"
            )
        return f"cannot connect to the DBus system bus at {address or 'unix:path=' + SYSTEM_SOCKET}: {error}"
    if env.get(ADDRESS_VARIABLE):
        return (
            f"cannot connect to the DBus session bus at {env[ADDRESS_VARIABLE]} ({ADDRESS_VARIABLE}): {error}; "
            "is that bus still running?"
        )
    if bus is not None and bus.usable:
        return (
            f"cannot connect to {bus.describe()}: {error}; run scripts/quickstart again, "
            f"or export {ADDRESS_VARIABLE} of a running bus"
        )
    if bus is not None:
        return (
            f"cannot connect to the DBus session bus: {ADDRESS_VARIABLE} is not set and the bus recorded in "
            f"{bus.file} {bus.problem}; run scripts/quickstart again to start one, or export {ADDRESS_VARIABLE} "
            "of a running bus"
        )
    return (
        f"cannot connect to the DBus session bus: {ADDRESS_VARIABLE} is not set and there is no desktop session "
        f"here; export the address of a running bus (start one with `dbus-daemon --session --fork "
        f"--print-address` and export what it prints), or run scripts/quickstart, which starts one and "
        f"records it in {record} for the gateway to find"
    )

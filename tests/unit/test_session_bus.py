"""Reading the session bus the quick start recorded: its file's forms, and when a record is not used."""

from __future__ import annotations

from pathlib import Path

import pytest

from aai_gateway.config import load_settings
from aai_gateway.session_bus import parse, recorded, unix_socket
from tests.support import Bus


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("export DBUS_SESSION_BUS_ADDRESS='unix:path=/tmp/a,guid=1'\nDBUS_SESSION_BUS_PID=42\n",
         {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/a,guid=1", "DBUS_SESSION_BUS_PID": "42"}),
        ('# dbus-launch\nDBUS_SESSION_BUS_ADDRESS="unix:abstract=/tmp/b"; export DBUS_SESSION_BUS_ADDRESS\n',
         {"DBUS_SESSION_BUS_ADDRESS": "unix:abstract=/tmp/b"}),
        ("not a line 'unclosed\nA=1 B=2\n", {"A": "1", "B": "2"}),
    ],
)  # fmt: skip
def test_the_record_is_read_as_a_shell_reads_it(text: str, expected: dict[str, str]) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("address", "socket"),
    [
        ("unix:path=/tmp/dbus-x,guid=abc", "/tmp/dbus-x"),
        ("unix:abstract=/tmp/dbus-y,guid=abc", "\0/tmp/dbus-y"),
        ("tcp:host=localhost,port=1;unix:path=/run/a%20b", "/run/a b"),
        ("tcp:host=localhost,port=1", None),
    ],
)
def test_the_socket_of_an_address(address: str, socket: str | None) -> None:
    assert unix_socket(address) == socket


def write(home: Path, text: str) -> None:
    (home / ".aai").mkdir(parents=True, exist_ok=True)
    (home / ".aai" / "session-bus").write_text(text)


def test_a_live_bus_is_used_and_the_variable_wins(bus: Bus, tmp_path: Path) -> None:
    write(tmp_path, f"export DBUS_SESSION_BUS_ADDRESS='{bus.address}'\nDBUS_SESSION_BUS_PID={bus.proc.pid}\n")
    found = recorded({"HOME": str(tmp_path)})
    assert found is not None
    assert found.usable
    assert (found.address, found.pid) == (bus.address, bus.proc.pid)
    assert load_settings({"HOME": str(tmp_path)}).session_bus == found
    assert recorded({"HOME": str(tmp_path), "DBUS_SESSION_BUS_ADDRESS": "unix:path=/elsewhere"}) is None
    moved = tmp_path / "elsewhere"
    write(moved, f"DBUS_SESSION_BUS_ADDRESS={bus.address}\n")
    by_aai_home = recorded({"HOME": str(tmp_path / "nobody"), "AAI_HOME": str(moved / ".aai")})
    assert by_aai_home is not None
    assert by_aai_home.usable


def test_records_that_cannot_be_used_say_why(tmp_path: Path) -> None:
    assert recorded({"HOME": str(tmp_path)}) is None
    write(tmp_path, "DBUS_SESSION_BUS_PID=1\n")
    found = recorded({"HOME": str(tmp_path)})
    assert found is not None
    assert found.problem == "names no DBUS_SESSION_BUS_ADDRESS"
    write(tmp_path, f"DBUS_SESSION_BUS_ADDRESS=unix:path={tmp_path / 'none'}\n")
    found = recorded({"HOME": str(tmp_path)})
    assert found is not None
    assert not found.usable
    assert found.problem == "does not accept connections (No such file or directory)"

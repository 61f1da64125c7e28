"""`aai-gateway --help` and each group's help list every command with a whole phrase, never one cut short."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support import gateway_command

pytestmark = pytest.mark.e2e

GROUPS = ((), ("auth",), ("consent",), ("history",), ("service",))


def commands(*group: str, columns: int) -> dict[str, str]:
    """The `Commands:` section of a help page as command → its line, wrapped lines joined."""
    env = {**os.environ, "COLUMNS": str(columns)}
    shown = subprocess.run(
        [gateway_command(), *group, "--help"], env=env, capture_output=True, text=True, timeout=30, check=True
    ).stdout
    found: dict[str, str] = {}
    name = ""
    for line in shown.split("Commands:\n", 1)[1].splitlines():
        if not line.strip():
            break
        if line.startswith("  ") and not line.startswith("   "):
            name, _, text = line.strip().partition(" ")
            found[name] = text.strip()
        else:
            found[name] += " " + line.strip()
    return found


@pytest.mark.parametrize("columns", [80, 50, 200])
@pytest.mark.parametrize("group", GROUPS, ids=lambda g: " ".join(g) or "top")
def test_no_command_line_is_cut_short(group: tuple[str, ...], columns: int) -> None:
    listed = commands(*group, columns=columns)
    assert listed
    for name, text in listed.items():
        assert not text.endswith(("...", "e.g.", "e.g", ",", ";", ":")), f"{' '.join(group)} {name}: {text!r}"
        assert text.endswith("."), f"{' '.join(group)} {name}: {text!r} is not a whole sentence"
        assert len(text.split()) >= 4, f"{' '.join(group)} {name}: {text!r}"


def test_the_top_level_help_names_every_command_and_what_call_does() -> None:
    listed = commands(columns=80)
    assert set(listed) >= {"apps", "auth", "call", "consent", "guide", "history", "validate"}
    assert listed["call"] == "Run one tool of an app and print its result."
    assert set(commands("consent", columns=80)) == {"allow", "allow-server", "deny", "list", "revoke"}
    assert set(commands("service", columns=80)) == {"install", "status", "uninstall"}

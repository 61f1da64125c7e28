"""The command line an MCP server's app starts: what is shown of it, and what its fingerprint covers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aai_gateway.consent import ConsentStore
from aai_gateway.consent.launches import fingerprint, launch_line

BASE: dict[str, Any] = {
    "command": "/bin/sh",
    "args": ["-c", "serve"],
    "env": {"MODE": "fast", "KEY": {"$keyring": "k"}},
    "cwd": "/srv",
}


@pytest.mark.parametrize(
    "change",
    [
        {"command": "/bin/bash"},
        {"args": ["-c", "serve; touch /tmp/x"]},
        {"args": ["-c", "serve", "--more"]},
        {"cwd": "/"},
        {"env": {"MODE": "fast", "KEY": {"$keyring": "other"}}},
        {"env": {"MODE": "fast", "KEY": {"$env": "k"}}},
        {"env": {"MODE": "fast", "KEY": {"$keyring": "k"}, "LD_PRELOAD": "/tmp/evil.so"}},
        {"env": {"MODE": "slow", "KEY": {"$keyring": "k"}}},
        {"url": "https://other.example/mcp"},
        {"headers": {"Authorization": {"$keyring": "github"}}},
    ],
)
def test_any_change_to_what_is_run_changes_the_fingerprint(change: dict[str, Any]) -> None:
    assert fingerprint(BASE | change) != fingerprint(BASE)


def test_what_is_not_launched_and_key_order_leave_it_alone() -> None:
    reordered = {"cwd": "/srv", "env": {"KEY": {"$keyring": "k"}, "MODE": "fast"}, "args": ["-c", "serve"]}
    assert fingerprint(reordered | {"command": "/bin/sh"}) == fingerprint(BASE)
    assert fingerprint(BASE | {"overrides": [{"name": "x", "exclude": True}]}) == fingerprint(BASE)


def test_an_auth_naming_another_secret_changes_it() -> None:
    assert fingerprint(BASE, {"type": "bearer", "token": {"$keyring": "a"}}) != fingerprint(
        BASE, {"type": "bearer", "token": {"$keyring": "b"}}
    )


@pytest.mark.hostile("store")
def test_secrets_are_masked_and_control_characters_shown() -> None:
    options = {
        "command": "node",
        "args": ["server.js", "--api-key", "sk-123456", "--token=abcdef", "line\nbreak\u202e"],
        "env": {"API_TOKEN": "s3cret", "PLAIN": "v", "REF": {"$env": "HOME_TOKEN"}},
    }
    line = launch_line("mcp.x", options)
    shown = "\n".join(line.lines())
    for secret in ("sk-123456", "abcdef", "s3cret"):
        assert secret not in shown
    assert "--api-key '[redacted]'" in shown
    assert "'--token=[redacted]'" in shown
    assert "PLAIN=v" in shown
    assert "REF=$env:HOME_TOKEN" in shown
    assert "\\u000a" in shown
    assert "\\u202e" in shown
    assert "\n" not in line.command_line()


def test_one_approval_per_app_kept_in_the_file_beside_the_decisions(tmp_path: Path) -> None:
    path = tmp_path / "consent.json"
    store = ConsentStore(path)
    store.allow("mcp.x", "Claude")
    first = store.approve_server("mcp.x", "a" * 64, "sh -c serve")
    assert store.server_approved("mcp.x", "a" * 64)
    store.approve_server("mcp.x", "b" * 64, "sh -c serve --more")  # an update approved replaces the old line
    other = ConsentStore(path)  # another process reads the same file
    assert not other.server_approved("mcp.x", "a" * 64)
    assert other.server_approved("mcp.x", "b" * 64)
    assert len(other.decisions()) == 1
    assert other.revoke_server_id(first.id) == []
    assert [a.command for a in other.revoke_server("mcp.x")] == ["sh -c serve --more"]
    assert not store.server_approved("mcp.x", "b" * 64)
    assert oct(path.stat().st_mode & 0o777) == "0o600"

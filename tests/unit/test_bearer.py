"""The bearer token of /mcp: the token file (mode 0600, rotation), when a token is required, where it comes from."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from aai_gateway.config import Settings, load_settings
from aai_gateway.mcp.bearer import (
    Bearer,
    TokenProblem,
    bearer_for,
    is_loopback,
    read_token,
    requirement,
    token_file,
    write_token,
)
from aai_gateway.web.pages import settings_rows

EVERYWHERE = "0.0.0.0"  # noqa: S104 - naming the wildcard address, not binding to it


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_token_file_is_written_0600_whatever_the_umask_and_the_mode_it_had(tmp_path: Path) -> None:
    path = tmp_path / "aai" / "mcp-token"
    old = os.umask(0)
    try:
        first = write_token(path)
    finally:
        os.umask(old)
    assert mode_of(path) == 0o600
    assert path.read_text() == first + "\n"
    assert read_token(path) == first
    path.chmod(0o644)
    second = write_token(path)
    assert mode_of(path) == 0o600
    assert read_token(path) == second


def test_rotation_replaces_the_file_in_one_step_with_a_fresh_token(tmp_path: Path) -> None:
    path = tmp_path / "mcp-token"
    tokens = [write_token(path) for _ in range(5)]
    assert len(set(tokens)) == 5
    assert all(len(t) >= 40 for t in tokens)
    assert read_token(path) == tokens[-1]
    assert [p.name for p in tmp_path.iterdir()] == ["mcp-token"], "no temporary file is left behind"


@pytest.mark.parametrize(
    ("content", "mode", "message"),
    [
        (None, 0o600, "does not exist"),
        ("a-good-token-of-enough-length\n", 0o640, "can be read by other users (mode 640)"),
        ("a-good-token-of-enough-length\n", 0o604, "can be read by other users (mode 604)"),
        ("  \n", 0o600, "is empty"),
        ("two words in the token file\n", 0o600, "holds characters a bearer token cannot have"),
        ("tooshort", 0o600, "is shorter than 16 characters"),
        (b"\xff\xfe-not-utf-8-at-all", 0o600, "cannot be read"),
    ],
)
def test_an_unusable_token_file_is_a_problem_saying_how_to_fix_it(
    tmp_path: Path, content: str | bytes | None, mode: int, message: str
) -> None:
    path = tmp_path / "mcp-token"
    if content is not None:
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        path.chmod(mode)
    with pytest.raises(TokenProblem) as caught:
        read_token(path)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)
    assert "`aai-gateway token --rotate` writes a new one" in str(caught.value)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("::1", True),
        ("[::1]", True),
        (EVERYWHERE, False),
        ("::", False),
        ("192.168.1.5", False),
        ("10.0.0.1", False),
        ("myhost.local", False),
        ("localhost.example.com", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def settings_for(tmp_path: Path, env: dict[str, str] | None = None, **config: object) -> Settings:
    (tmp_path / ".aai").mkdir(exist_ok=True)
    (tmp_path / ".aai" / "config.json").write_text(json.dumps(config))
    return load_settings({"HOME": str(tmp_path), **(env or {})})


def test_when_a_token_is_required(tmp_path: Path) -> None:
    assert requirement(settings_for(tmp_path)).needed is False
    assert requirement(settings_for(tmp_path, httpHost=EVERYWHERE)).needed is True
    assert requirement(settings_for(tmp_path, mcpAuth="always")).why == 'mcpAuth is "always"'
    assert bearer_for(settings_for(tmp_path)) is None
    with pytest.raises(TokenProblem, match=r"because 0\.0\.0\.0 is not a loopback address, but none is set"):
        bearer_for(settings_for(tmp_path, httpHost=EVERYWHERE))
    with pytest.raises(TokenProblem, match=r'because mcpAuth is "always", but none is set'):
        bearer_for(settings_for(tmp_path, mcpAuth="always"))


def test_a_token_from_the_environment_is_masked_and_never_shown(tmp_path: Path) -> None:
    token = "env-token-0123456789abcdefghij"
    settings = settings_for(tmp_path, {"MY_TOKEN": token}, httpHost="::", mcpToken={"$env": "MY_TOKEN"})
    assert token not in repr(settings)
    bearer = bearer_for(settings)
    assert bearer is not None
    assert token not in bearer.where
    assert bearer.where == "the value of environment variable MY_TOKEN"
    assert bearer.accepts(token)
    assert not bearer.accepts(token + "x")
    assert not bearer.accepts(token[:-1])
    assert not token_file(settings).exists(), "an environment token never writes the file"
    rows = {row["key"]: row["value"] for row in settings_rows(settings)}
    assert (rows["mcpAuth"], rows["mcpToken"]) == ('"remote"', '"MY_TOKEN"')
    assert token not in json.dumps(rows), "the web UI's settings page names the variable, never its value"


def test_a_file_token_is_read_again_when_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "mcp-token"
    first = write_token(path)
    bearer = Bearer(file=path)
    assert bearer.accepts(first)
    second = write_token(path)
    assert bearer.accepts(second)
    assert not bearer.accepts(first)
    path.unlink()
    assert not bearer.accepts(second), "a token file that goes away lets nobody in"
    third = write_token(path)
    assert bearer.accepts(third)
    path.chmod(0o644)
    assert not bearer.accepts(third), "nor does one that others can read"

"""The systemd unit `aai-gateway service install` writes: each word kept literal, whatever a path holds."""

from __future__ import annotations

import pytest

from aai_gateway.cli.service import elsewhere, quoted, unit_text


@pytest.mark.parametrize(
    ("word", "written"),
    [
        ("/usr/bin/aai-gateway", "/usr/bin/aai-gateway"),
        ("serve", "serve"),
        ("/home/me/my tools/aai-gateway", '"/home/me/my tools/aai-gateway"'),
        ("/home/100%/x", "/home/100%%/x"),  # %h would be the home folder
        ("/home/$USER/x", "/home/$$USER/x"),  # $USER would be expanded
        ('/a"b', '"/a\\"b"'),
        ("/a\\b", '"/a\\\\b"'),
        ("/a;b", '"/a;b"'),  # a lone ; separates commands
    ],
)
def test_a_word_is_written_literally(word: str, written: str) -> None:
    assert quoted(word) == written


def test_an_environment_assignment_keeps_dollars_as_they_are() -> None:
    """Environment= expands specifiers but no variables: `$$` would stay two dollars."""
    assert quoted("AAI_HOME=/x y/$HOME/100%", command=False) == '"AAI_HOME=/x y/$HOME/100%%"'


@pytest.mark.parametrize("word", ["/a\nExecStartPre=/bin/sh", "/a\rb", "/a\x00b", "/a\x1bb"])
def test_a_control_character_is_refused(word: str) -> None:
    with pytest.raises(ValueError, match="control character"):
        quoted(word)


def test_the_unit_restarts_on_failure_and_names_its_environment() -> None:
    text = unit_text(["/opt/aai gw/aai-gateway", "serve"], {"AAI_HOME": "/srv/aai"})
    assert '\nExecStart="/opt/aai gw/aai-gateway" serve\n' in text
    assert "\nEnvironment=AAI_HOME=/srv/aai\n" in text
    assert "\nRestart=on-failure\n" in text
    assert "\nKillMode=mixed\n" in text


@pytest.mark.parametrize(("platform", "hint"), [("darwin", "launchd"), ("win32", "Task Scheduler"), ("linux", "PATH")])
def test_without_systemd_the_way_is_named(platform: str, hint: str) -> None:
    assert hint in elsewhere(platform)

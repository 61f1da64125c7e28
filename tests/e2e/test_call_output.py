"""What `aai-gateway call` prints for a tool with no result: words on a terminal, JSON `null` when piped
or with --json."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_history import cli, env_for, home_for
from tests.support import Bus, gateway_command

pytestmark = [pytest.mark.e2e]

SET = ("call", "dev.aai.echo", "set_volume", '{"level": 0.5}')


def on_a_terminal(env: dict[str, str], *args: str) -> tuple[int, str]:
    """Run the command with its stdout on a pseudo-terminal; its exit code and what it printed there."""
    main, side = os.openpty()
    try:
        done = subprocess.run(
            [gateway_command(), *args], env=env, stdout=side, stderr=subprocess.PIPE, timeout=60, check=False
        )
    finally:
        os.close(side)
    chunks = []
    try:
        while chunk := os.read(main, 65536):
            chunks.append(chunk)
    except OSError:  # EIO: the terminal's other side is closed and everything was read
        pass
    finally:
        os.close(main)
    return done.returncode, b"".join(chunks).decode().replace("\r\n", "\n")


def test_a_call_with_no_result_says_so_on_a_terminal_and_stays_json_when_piped(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    env = env_for(bus, home_for(tmp_path))
    code, shown = on_a_terminal(env, *SET)
    assert code == 0
    assert shown == "dev.aai.echo set_volume: the call succeeded, with no result.\n"
    piped = cli(env, *SET)
    assert (piped.returncode, piped.stdout) == (0, "null\n")
    code, forced = on_a_terminal(env, *SET, "--json")
    assert (code, forced) == (0, "null\n")
    code, text = on_a_terminal(env, "call", "dev.aai.echo", "echo", '{"text": "hi"}')
    assert (code, text) == (0, "hi\n")
    assert cli(env, "call", "dev.aai.echo", "echo", '{"text": "hi"}', "--json").stdout == '"hi"\n'

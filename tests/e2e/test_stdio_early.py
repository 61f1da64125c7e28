"""The first answers of a stdio session, given before the SDK is imported, are the SDK's answers.

The same requests are sent to a gateway with `fastStdio` (answered early) and to one without (the SDK
answers everything); the answers must be identical.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import FIXED_TOOLS, TEST_APPS, gateway_command, install_descriptor

pytestmark = [pytest.mark.e2e]


def requests(version: str, client: dict[str, Any]) -> bytes:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": client},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def answers(home: Path, data: bytes, *, fast: bool, **config: Any) -> list[dict[str, Any]]:
    (home / ".aai" / "config.json").write_text(json.dumps({"fastStdio": fast, **config}))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "AAI_PLATFORM": "linux"}
    with subprocess.Popen(
        [gateway_command(), "--mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    ) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(data)
        proc.stdin.flush()
        found = [json.loads(proc.stdout.readline()) for _ in range(data.count(b'"id"'))]
        proc.stdin.close()
        proc.wait(30)
    return found


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.tasks" / "aai.json")
    return home


@pytest.mark.parametrize(
    ("version", "names"), [("2025-11-25", "seed"), ("2024-11-05", "strict"), ("1999-01-01", "seed")]
)
def test_early_answers_are_the_sdks(home: Path, version: str, names: str) -> None:
    data = requests(version, {"name": "early-tests", "version": "1"})
    early = answers(home, data, fast=True, toolNames=names)
    sdk = answers(home, data, fast=False, toolNames=names)
    assert [a["id"] for a in sdk] == [1, 2]
    assert early == sdk
    assert len(early[1]["result"]["tools"]) == len(FIXED_TOOLS) + 2  # the fixed tools and two apps


def test_an_initialize_the_sdk_would_refuse_is_left_to_it(home: Path) -> None:
    data = requests("2025-11-25", {"name": "no version"})
    early = answers(home, data, fast=True)
    sdk = answers(home, data, fast=False)
    assert early == sdk
    assert "error" in early[0]

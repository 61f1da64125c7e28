"""A restart answers `tools/list` with the listing the last start kept, when nothing it depends on changed;
anything that did change is listed at once, and a kept listing the scan contradicts is followed by
`notifications/tools/list_changed` before the next answer."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import TEST_APPS, gateway_command, install_descriptor

pytestmark = [pytest.mark.e2e]

HANDSHAKE = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


def session(home: Path) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]:
    """Start the gateway, list its tools, then list them again: the first listing, the notifications sent
    before the second answer, and the second listing."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "AAI_PLATFORM": "linux"}
    with subprocess.Popen(
        [gateway_command(), "--mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    ) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write("".join(json.dumps(line) + "\n" for line in HANDSHAKE).encode())
        proc.stdin.flush()
        seen: list[dict[str, Any]] = []
        while not any(message.get("id") == 2 for message in seen):
            seen.append(json.loads(proc.stdout.readline()))
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).encode() + b"\n")
        proc.stdin.flush()
        later: list[dict[str, Any]] = []
        while not any(message.get("id") == 3 for message in later):
            later.append(json.loads(proc.stdout.readline()))
        proc.stdin.close()
        proc.wait(30)
    first = next(m for m in seen if m.get("id") == 2)["result"]["tools"]
    second = next(m for m in later if m.get("id") == 3)["result"]["tools"]
    told = [m["method"] for m in [*seen, *later] if "method" in m]
    return first, told, second


def descriptions(tools: list[dict[str, Any]]) -> dict[str, str]:
    return {tool["name"]: tool["description"] for tool in tools}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    return home


def kept_file(home: Path) -> Path:
    return home / ".cache" / "aai-gateway" / "_listing.json"


def test_a_restart_answers_with_the_kept_listing_and_says_when_the_scan_differs(home: Path) -> None:
    first, told, again = session(home)
    assert first == again
    assert told == []
    kept = json.loads(kept_file(home).read_text())
    assert kept["tools"] == first
    # Only the kept listing can say this: the restart answers with it, before its scan.
    kept["tools"][-1]["description"] = "remembered, not scanned"
    kept_file(home).write_text(json.dumps(kept))
    listed, told, after = session(home)
    assert descriptions(listed)[first[-1]["name"]] == "remembered, not scanned"
    assert "notifications/tools/list_changed" in told, "told before the next answer"
    assert after == first
    assert json.loads(kept_file(home).read_text())["tools"] == first, "the scan's listing is kept again"
    assert session(home) == (first, [], first)


def test_what_the_listing_depends_on_changing_is_listed_at_once(home: Path) -> None:
    first, _, _ = session(home)
    descriptor = home / ".aai" / "dev.aai.echo" / "aai.json"
    text = descriptor.read_text()
    described = json.loads(text)["description"]
    before = descriptor.stat()
    descriptor.write_text(text.replace(described, described.upper()))  # in place, the same size
    os.utime(descriptor, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same modification time
    after = descriptor.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    changed, told, _ = session(home)
    assert described.upper().rstrip(".") in json.dumps(changed, ensure_ascii=False)
    assert described.upper().rstrip(".") not in json.dumps(first, ensure_ascii=False)
    assert told == []
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.tasks" / "aai.json")
    added, told, _ = session(home)
    assert len(added) == len(changed) + 1
    assert told == []
    (home / ".aai" / "config.json").write_text(json.dumps({"catalogue": "search"}))
    searched, told, _ = session(home)
    assert len(searched) < len(added)
    assert told == []


@pytest.mark.parametrize(
    "garbage",
    [b"", b"\x00\xff not json", b"[1, 2]", b'{"key": 1, "tools": "no"}', b"[" * 100_000, b" " * (17 << 20)],
    ids=["empty", "binary", "array", "wrong types", "deep", "huge"],
)
def test_a_kept_listing_that_is_no_listing_is_ignored(home: Path, garbage: bytes) -> None:
    first, _, _ = session(home)
    kept_file(home).write_bytes(garbage)
    assert session(home) == (first, [], first)
    assert json.loads(kept_file(home).read_text())["tools"] == first


@pytest.mark.parametrize(
    "tools", ["no", [1, 2], [{"name": 3}], [{"name": "x", "inputSchema": []}], [{"inputSchema": {}}]]
)
def test_a_kept_listing_of_no_tools_under_the_right_key_is_ignored(home: Path, tools: Any) -> None:
    first, _, _ = session(home)
    kept = json.loads(kept_file(home).read_text())
    kept_file(home).write_text(json.dumps({"key": kept["key"], "tools": tools}))
    assert session(home) == (first, [], first)

"""Identifiers ending in a newline, which Python's `$` lets through (it matches before a final newline):
refused wherever an id is checked, through the installed command."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.library.test_store import served
from tests.support import TEST_APPS, Bus, gateway_command

pytestmark = pytest.mark.e2e

ECHO = json.loads((TEST_APPS / "dev.aai.echo" / "aai.json").read_text("utf-8"))


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    """A folder served over loopback HTTP; yields it, its URL in `url.txt`."""
    root = tmp_path / "store"
    root.mkdir()
    with served(root) as url:
        (tmp_path / "url.txt").write_text(url)
        yield root


@pytest.mark.hostile("validation")
def test_install_refuses_an_app_id_ending_in_a_newline(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True)
    source = tmp_path / "nl.json"
    source.write_text(json.dumps(ECHO | {"appId": "com.example.nl\n"}))
    done = cli(home, "install", str(source))
    assert done.returncode != 0
    assert "appId" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in (home / ".aai").iterdir() if p.is_dir()) == []


@pytest.mark.hostile("store")
def test_a_store_entry_whose_id_ends_in_a_newline_is_left_out(store: Path, tmp_path: Path) -> None:
    data = json.dumps(ECHO).encode()
    (store / "aai.json").write_bytes(data)
    entry = {
        "names": {"en": "Echo"},
        "description": "The echo app",
        "version": "1.0.0",
        "descriptorUrl": "aai.json",
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    entries = [entry | {"id": "dev.aai.echo\n"}, entry | {"id": "dev.aai.echo", "names": {"en": "Echo", "fr\n": "x"}}]
    entries.append(entry | {"id": "dev.aai.echo", "version": "1.0.0\n"})
    (store / "index.json").write_text(json.dumps({"store": {"name": "S", "formatVersion": 1}, "entries": entries}))
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True)
    url = f"{(tmp_path / 'url.txt').read_text()}/index.json"
    (home / ".aai" / "config.json").write_text(json.dumps({"storeUrls": [url], "web": {"allowHttpLoopback": True}}))
    done = cli(home, "library", "--json")
    assert done.returncode == 0, done.stderr
    assert all("\n" not in e["id"] and e.get("source") != url for e in json.loads(done.stdout))
    for number, where in enumerate(("id", "names", "version")):
        assert f"index.json#/entries/{number}/{where}" in done.stderr


@pytest.mark.hostile("validation")
@pytest.mark.parametrize(
    ("telemetry", "key"),
    [({"headers": {"x-key\n": "v"}}, "telemetry/headers"), ({"endpoint": "http://127.0.0.1:4318\n"}, "endpoint")],
    ids=["header-name", "endpoint"],
)
def test_config_values_ending_in_a_newline_are_config_errors(
    tmp_path: Path, telemetry: dict[str, Any], key: str
) -> None:
    (tmp_path / ".aai").mkdir()
    (tmp_path / ".aai" / "config.json").write_text(json.dumps({"telemetry": telemetry}))
    done = cli(tmp_path, "apps")
    assert done.returncode != 0
    assert "config.json" in done.stderr
    assert key in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.anyio
@pytest.mark.hostile("validation")
async def test_a_parameter_pattern_refuses_a_value_ending_in_a_newline(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    """A descriptor's patterns are ECMA-262 ones, where `$` is the end of the text: `^[a-z]+$` takes
    "abc" but not "abc\\n", as any other JSON Schema validator would judge."""
    home = tmp_path / "home"
    doc = copy.deepcopy(ECHO)
    tool = doc["platforms"]["linux"]["tools"][0]
    tool["parameters"]["properties"]["text"]["pattern"] = "^[a-z]+$"
    (home / ".aai" / "dev.aai.echo").mkdir(parents=True)
    (home / ".aai" / "dev.aai.echo" / "aai.json").write_text(json.dumps(doc))
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}}))
    async with stdio_session(bus.env(HOME=str(home), AAI_PLATFORM="linux"), tmp_path / "stderr.log") as session:
        call = {"app": "dev.aai.echo", "tool": tool["name"]}
        assert text_of(await session.call_tool("aai_exec", call | {"args": {"text": "abc"}})) == "abc"
        error = await error_of(session, "aai_exec", call | {"args": {"text": "abc\n"}})
        assert error.data["type"] == "INVALID_PARAMS"
        assert error.data["detail"] == 'args.text: "abc\\n" is not in the expected form (pattern ^[a-z]+$)'

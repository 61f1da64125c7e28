"""The real MCP servers the tests and the benchmark serve as apps, as `scripts/test` installs them."""

from __future__ import annotations

import json
import platform
import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
MODULES = HERE / "node_modules"
GIT_SERVER = HERE / ".venv-git" / "bin" / "mcp-server-git"
MARK = "AAI_TEST_MARK"
"""An environment variable every server of a test gets, so the test can find those processes."""


def node() -> str:
    """Node 22 from the node-linux-* package when it is there (server-everything needs it), else PATH's."""
    arch = "arm64" if platform.machine() in ("aarch64", "arm64") else "x64"
    bundled = MODULES / f"node-linux-{arch}" / "bin" / "node"
    found = str(bundled) if bundled.exists() else shutil.which("node")
    assert found, "node is not installed; run scripts/test"
    return found


def server_js(name: str) -> str:
    script = MODULES / "@modelcontextprotocol" / f"server-{name}" / "dist" / "index.js"
    assert script.exists(), f"{script} is missing; run npm install --prefix tests/mcpservers"
    return str(script)


def stdio(name: str, *args: str, mark: str = "", **env: Any) -> dict[str, Any]:
    """The execution block of an npm server over stdio."""
    return {"type": "mcp", "command": node(), "args": [server_js(name), *args], "env": {MARK: mark, **env}}


def hostile(plan_file: Path, plan: dict[str, Any], mark: str = "", **env: Any) -> dict[str, Any]:
    """The execution block of `hostile_server` following `plan` (written to `plan_file`)."""
    plan_file.write_text(json.dumps(plan))
    script = str(HERE / "hostile_server.py")
    return {"type": "mcp", "command": sys.executable, "args": [script, str(plan_file)], "env": {MARK: mark, **env}}


def descriptor(app_id: str, execution: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schemaVersion": "1.0",
        "version": "1.0.0",
        "platform": "mcp",
        "app": {
            "id": app_id,
            "name": {"en": app_id.rsplit(".", maxsplit=1)[-1].title()},
            "description": f"the {app_id} server",
        },
        "execution": execution,
    }
    if tools is not None:
        doc["tools"] = tools
    return doc


def install(aai_home: Path, *docs: dict[str, Any], config: dict[str, Any] | None = None) -> None:
    for doc in docs:
        folder = aai_home / doc["app"]["id"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "aai.json").write_text(json.dumps(doc))
    (aai_home / "config.json").write_text(json.dumps(config or {"consent": {"default": "allow"}}))


def marked(mark: str) -> list[int]:
    """Pids of live processes whose environment holds `MARK=mark`."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"

"""Saved workflows over the echo test app, and an AAI home holding them, for the CLI and UI tests."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support import TEST_APPS, Bus, gateway_command, install_descriptor

ECHO = "dev.aai.echo"

ECHO_TWICE: dict[str, Any] = {
    "name": {"en": "Echo and add", "de": "Echo und addieren"},
    "description": "Echoes the text and adds one to the count.",
    "inputs": {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to echo"},
            "count": {"type": "integer", "default": 2},
            "loud": {"type": "boolean"},
        },
        "required": ["text"],
    },
    "steps": [
        {"id": "said", "app": ECHO, "tool": "echo", "args": {"text": "${inputs.text}"}},
        {"id": "sum", "app": ECHO, "tool": "add", "args": {"a": "${inputs.count}", "b": 1}},
    ],
    "output": {"said": "${steps.said.result}", "sum": "${steps.sum.result}", "loud": "${inputs.loud}"},
}

FAILING: dict[str, Any] = {
    "name": "Echo, then fail",
    "inputs": {"type": "object", "properties": {"why": {"type": "string", "default": "on purpose"}}},
    "steps": [
        {"id": "first", "app": ECHO, "tool": "echo", "args": {"text": "before"}},
        {
            "id": "boom",
            "app": ECHO,
            "tool": "fail",
            "args": {"message": "${inputs.why}"},
            "if": "${steps.first.result}",
        },
    ],
    "onError": "stop",
}

BROKEN: dict[str, Any] = {
    "name": "Broken",
    "steps": [{"id": "a", "app": ECHO, "tool": "echo", "args": {"t": "${inputs.x}"}}],
}
"""Reads an input its (missing) inputs schema does not declare: /steps/0/args/t."""


def workflows_home(home: Path, files: dict[str, dict[str, Any]]) -> Path:
    """An AAI home with the echo app installed and the given workflows (id → document); its workflows folder."""
    aai = home / ".aai"
    install_descriptor(aai, TEST_APPS / ECHO / "aai.json")
    (aai / "config.json").write_text(json.dumps({"consent": {"default": "ask"}}))
    folder = aai / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    for workflow_id, doc in files.items():
        (folder / f"{workflow_id}.json").write_text(json.dumps(doc))
    return folder


def home_env(bus: Bus, home: Path) -> dict[str, str]:
    return bus.env(HOME=str(home), AAI_PLATFORM="linux")


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)

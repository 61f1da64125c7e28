"""What the command loads before it can answer: the MCP SDK (and pydantic under it) takes ~0.3 s and ~40 MB
to import, which a stdio gateway puts off until after its first answers (see mcp/wire/early.py), and
which a one-shot command such as `aai-gateway history` never needs. A module that imports the SDK at
its top, anywhere below the command, undoes that quietly: this catches it."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("mcp", "mcp_types", "pydantic", "pydantic_core", "starlette", "uvicorn", "jinja2", "authlib", "httpx2")


def test_the_command_imports_without_the_sdk() -> None:
    code = (
        "import json, sys; import aai_gateway.cli.root; "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))

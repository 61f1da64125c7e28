"""Each MCP server's last tool list, kept on disk so that search never starts a server.

`<cache_dir>/mcp-tools/<appId>.json` holds the tools as the gateway last served them (after the
descriptor's renames and exclusions): `{"descriptor": SHA-256 of the descriptor, "tools": [...]}`. A list
kept for another version of the descriptor is not used. What is read back is checked like any other
input: a size cap, and every entry must have the fields a tool has.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aai_gateway import paths
from aai_gateway.descriptor import Annotations, Descriptor, Tool
from aai_gateway.descriptor.validate import read_bytes

log = logging.getLogger("aai_gateway.search")

FOLDER = "mcp-tools"
MAX_BYTES = 8 * 1024 * 1024


def _file(cache_dir: Path, app_id: str) -> Path:
    return cache_dir / FOLDER / f"{app_id}.json"


def fingerprint(app: Descriptor) -> str:
    return hashlib.sha256(json.dumps(app.document, sort_keys=True, default=str).encode()).hexdigest()


def remember(cache_dir: Path, app: Descriptor, tools: Sequence[Tool]) -> bool:
    """Keep `tools` as `app`'s last list; whether that changed what was kept. A cache that cannot be
    written is logged, never an error."""
    listed = [
        {
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "annotations": t.annotations.to_json(),
        }
        for t in tools
    ]
    data = json.dumps({"descriptor": fingerprint(app), "tools": listed}, default=str).encode()
    target = _file(cache_dir, app.app_id)
    kept, _ = read_bytes(target, MAX_BYTES)
    if kept == data:
        return False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        paths.write_atomic(target, data)
    except OSError as exc:
        log.warning("cannot keep the tool list of %s in %s: %s", app.app_id, target, exc)
    return True


def recall(cache_dir: Path, app: Descriptor) -> tuple[Tool, ...] | None:
    """The tools kept for this version of `app`, or None when there are none (or they cannot be read)."""
    data, problem = read_bytes(_file(cache_dir, app.app_id), MAX_BYTES)
    if data is None or problem is not None:
        return None
    try:
        kept: Any = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(kept, dict)
        or kept.get("descriptor") != fingerprint(app)
        or not isinstance(kept.get("tools"), list)
    ):
        return None
    tools = []
    for raw in kept["tools"]:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            continue
        parameters = raw.get("parameters")
        hints = raw.get("annotations")
        tools.append(
            Tool(
                name=raw["name"],
                description=str(raw.get("description") or ""),
                parameters=parameters if isinstance(parameters, dict) else {"type": "object"},
                annotations=Annotations.from_json(
                    {k: v for k, v in hints.items() if isinstance(v, bool)} if isinstance(hints, dict) else None
                ),
            )
        )
    return tuple(tools)

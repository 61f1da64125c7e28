"""What `tools/list` costs an agent's context: the gateway's listing (one guide tool per app, `aai:exec`,
`aai:batch`, `web:discover`) against a flat listing of every tool of every app with its input schema, as
a server exposing each operation as its own MCP tool would send it.

Run from the repository root with the venv the gateway is installed in:

    .venv/bin/python -m bench.listing_size [--apps 100] [--tools 20]

Both sizes are of the `result` as compact JSON; the gateway's is also measured as the line it wrote. Tokens
are estimated as bytes / 4.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from bench.descriptors import descriptor, write_home
from bench.jsonlines import INITIALIZE, INITIALIZED, answer, send, spawn
from tests.support import stop


def gateway_listing(env: dict[str, str]) -> tuple[dict[str, Any], int]:
    proc = spawn(env)
    try:
        send(proc.stdin, INITIALIZE)
        answer(proc.stdout, 1)
        send(proc.stdin, INITIALIZED)
        send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        message, wire = answer(proc.stdout, 2)
    finally:
        stop(proc)
    result: dict[str, Any] = message["result"]
    return result, wire


def flat_listing(apps: int, tools: int) -> dict[str, Any]:
    listed = []
    for n in range(apps):
        doc = descriptor(n, tools)
        for tool in doc["platforms"]["linux"]["tools"]:
            listed.append(
                {
                    "name": f"{doc['appId']}:{tool['name']}",
                    "description": tool["description"],
                    "inputSchema": tool["parameters"],
                }
            )
    return {"tools": listed}


def size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def listing_of(apps: int, tools: int, catalogue: str) -> tuple[dict[str, Any], int]:
    with tempfile.TemporaryDirectory() as tmp:
        write_home(Path(tmp) / ".aai", apps, tools)
        (Path(tmp) / ".aai" / "config.json").write_text(json.dumps({"catalogue": catalogue}))
        env = dict(os.environ, HOME=tmp, AAI_PLATFORM="linux")
        env.pop("AAI_HOME", None)
        env.pop("XDG_CACHE_HOME", None)
        return gateway_listing(env)


def modes(tools: int) -> None:
    """What each `catalogue` mode lists, for a few numbers of apps."""
    print(f"\ncatalogue modes ({tools} tools per app): tools listed, bytes, ~tokens")
    print(f"  {'apps':>5}  {'apps mode':>26}  {'search mode':>22}  {'auto mode':>22}")
    for apps in (1, 10, 26, 40, 100):
        cells = []
        for catalogue in ("apps", "search", "auto"):
            listing, _ = listing_of(apps, tools, catalogue)
            cells.append(f"{len(listing['tools']):4} {size(listing):8} ~{size(listing) // 4:6}")
        print(f"  {apps:>5}  {cells[0]:>26}  {cells[1]:>22}  {cells[2]:>22}")


def main(apps: int, tools: int) -> None:
    listing, wire = listing_of(apps, tools, "apps")
    flat = flat_listing(apps, tools)
    ours, theirs = size(listing), size(flat)
    print(f"{apps} apps x {tools} tools")
    label = "flat listing (every tool, own schema)"
    print(f"  {label:<42} {len(flat['tools']):5} tools {theirs:9} bytes  ~{theirs // 4} tokens")
    print(f"  {'gateway tools/list':<42} {len(listing['tools']):5} tools {ours:9} bytes  ~{ours // 4} tokens")
    print(f"  {'gateway tools/list, line on the wire':<42} {'':11} {wire:9} bytes")
    print(f"  {'ratio (target <= 3 %)':<42} {100 * ours / theirs:.2f} %")
    print(f"  {'largest entry':<42} {max(size(t) for t in listing['tools'])} bytes")
    modes(tools)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", type=int, default=100)
    parser.add_argument("--tools", type=int, default=20)
    args = parser.parse_args()
    main(args.apps, args.tools)

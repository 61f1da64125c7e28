"""Realistic generated descriptors for the benchmarks: DBus apps with named, described, typed tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VERBS = ("get", "set", "list", "open", "close", "play", "pause", "seek", "search", "create", "delete", "rename")
NOUNS = ("track", "volume", "playlist", "window", "document", "note", "folder", "tag", "account", "setting")


def tool(app: int, index: int) -> dict[str, Any]:
    verb, noun = VERBS[index % len(VERBS)], NOUNS[index // len(VERBS) % len(NOUNS)]
    return {
        "name": f"{verb}_{noun}_{index}",
        "description": f"{verb.capitalize()} the {noun} of the app; answers the {noun}'s new state as JSON",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {
                    "type": "string",
                    "description": f"The {noun}'s identifier in app {app}, as list_{noun} gives it",
                },
                "value": {"type": "integer", "minimum": 0, "maximum": 100, "description": "A level from 0 to 100"},
                "force": {"type": "boolean", "default": False, "description": "Act even when the app is busy"},
            },
            "required": ["id"],
        },
        "method": f"{verb.capitalize()}{noun.capitalize()}",
        "output_parser": "json",
    }


def descriptor(n: int, tools: int) -> dict[str, Any]:
    app_id = f"org.bench.app{n:04d}"
    return {
        "schema_version": "1.0",
        "appId": app_id,
        "name": f"Bench App {n}|基准 {n}",
        "description": f"Generated app {n} for benchmarks: media, documents and settings over DBus",
        "version": "1.0.0",
        "aliases": [f"bench{n}", f"app {n}"],
        "platforms": {
            "linux": {
                "automation": "dbus",
                "service": f"org.bench.App{n:04d}",
                "object": f"/org/bench/App{n:04d}",
                "interface": f"org.bench.App{n:04d}",
                "tools": [tool(n, i) for i in range(tools)],
            }
        },
    }


def write_home(aai_home: Path, apps: int, tools: int) -> int:
    """Write `apps` descriptors under `aai_home`; return their total size in bytes."""
    total = 0
    for n in range(apps):
        doc = descriptor(n, tools)
        folder = aai_home / doc["appId"]
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(doc, ensure_ascii=False, indent=2)
        (folder / "aai.json").write_text(text, "utf-8")
        total += len(text.encode())
    return total

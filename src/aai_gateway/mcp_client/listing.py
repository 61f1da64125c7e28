"""A server's `tools/list` pages, read as hostile input before the SDK's session sees them.

The SDK's session validates a whole page at once: one tool that is not a tool (a schema that is a list, a
name that is a number) makes it refuse every tool of the page. `sift` takes such tools out of the page,
with the reason, so the others serve. It also takes each tool's `outputSchema` aside: the session would
check every result against it with Python's backtracking `re`, where a server's pattern can hold the
gateway for minutes; the gateway keeps the schemas and uses them itself.

`Limits` bounds a listing: a server that pages forever, or lists more than anyone can use, is cut short.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp_types import methods
from pydantic import ValidationError

from aai_gateway.problems import short

MAX_PAGES = 50
MAX_TOOLS = 2000
MAX_BYTES = 16 * 1024 * 1024
"""A listing stops after this many pages, tools or bytes of tools (as JSON), and serves what it got."""


VERSIONS = sorted(version for method, version in methods.SERVER_RESULTS if method == "tools/list")


@dataclass
class Sifted:
    """What `sift` took out of the pages it saw: the tools left out (why, by name) and the output schemas."""

    left_out: list[str] = field(default_factory=list)
    output_schemas: dict[str, Any] = field(default_factory=dict)


def sift(result: dict[str, Any], sifted: Sifted, version: str | None) -> dict[str, Any]:
    """`result` (a `tools/list` result) with only the entries that are MCP tools of protocol `version` (every
    version the SDK knows when None), their output schemas aside."""
    tools = result.get("tools")
    if not isinstance(tools, list):
        return result
    kept: list[Any] = []
    page = {k: v for k, v in result.items() if k != "tools"}
    versions = [version] if version in VERSIONS else [v for v in VERSIONS if _fits(page, v)]
    for raw in tools:
        try:
            types.Tool.model_validate(raw, by_name=False)
            for known in versions:  # the shape the session checks the page for
                methods.validate_server_result("tools/list", known, {**page, "tools": [raw]})
        except (ValidationError, RecursionError) as exc:
            name = raw.get("name") if isinstance(raw, dict) else None
            sifted.left_out.append(f"tool {short(name)} is left out: it is not an MCP tool ({_first(exc)})")
            continue
        if "outputSchema" in raw:
            sifted.output_schemas[raw["name"]] = raw["outputSchema"]
        kept.append({k: v for k, v in raw.items() if k != "outputSchema"})
    return {**result, "tools": kept}


@dataclass
class Limits:
    """How much of a listing has been read, and whether it must stop (`over` says why)."""

    pages: int = 0
    tools: int = 0
    size: int = 0
    seen: set[str] = field(default_factory=set)

    def add(self, page: list[dict[str, Any]], cursor: str | None) -> str | None:
        """Count a page; why the listing stops here, or None to read the page after it."""
        self.pages += 1
        self.tools += len(page)
        self.size += sum(len(json.dumps(tool)) for tool in page)
        if cursor is not None and cursor in self.seen:
            return f"the server gave the cursor {short(cursor)} twice"
        if cursor is not None:
            self.seen.add(cursor)
        if cursor is not None and self.pages >= MAX_PAGES:
            return f"the server had more than {MAX_PAGES} pages of tools"
        if self.tools > MAX_TOOLS:
            return f"the server listed more than {MAX_TOOLS} tools"
        if self.size > MAX_BYTES:
            return f"the server's tools came to more than {MAX_BYTES // (1024 * 1024)} MiB"
        return None


def _fits(page: dict[str, Any], version: str) -> bool:
    try:
        methods.validate_server_result("tools/list", version, {**page, "tools": []})
    except ValidationError:
        return False
    return True


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError) and exc.errors():
        error = exc.errors()[0]
        loc = error["loc"][2:] if error["loc"][:2] == ("tools", 0) else error["loc"]
        where = ".".join(str(part) for part in loc) or "the tool"
        return f"{where}: {error['msg']}"
    return "nested too deeply"

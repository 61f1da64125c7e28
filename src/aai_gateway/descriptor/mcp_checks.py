"""The rules of an MCP server's descriptor (execution type `mcp`) that its schema cannot say."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aai_gateway.descriptor.tool_checks import hint_problems
from aai_gateway.problems import Problem, pointer, short

STDIO_KEYS = ("command", "args", "env", "cwd")
HTTP_KEYS = ("url", "headers")


def mcp_problems(doc: Mapping[str, Any], source: str) -> list[Problem]:
    """Platform and type agree; a stdio server (`command`) or an HTTP one (`url`), never both."""
    execution = doc.get("execution") or {}
    problems: list[Problem] = []
    if doc["platform"] != "mcp":
        at = pointer(["execution", "type"])
        problems.append(Problem(source, at, "type 'mcp' is only for platform 'mcp' (an MCP server serves everywhere)"))
    if execution.get("type") != "mcp":
        return problems
    stdio = [k for k in STDIO_KEYS if k in execution]
    http = [k for k in HTTP_KEYS if k in execution]
    if "command" not in execution and "url" not in execution:
        problems.append(
            Problem(
                source,
                pointer(["execution"]),
                "an mcp app needs 'command' (a stdio server it starts) or 'url' (a streamable HTTP server)",
            )
        )
    elif stdio and http:
        problems.append(
            Problem(
                source,
                pointer(["execution", http[0]]),
                f"'{http[0]}' is for an HTTP server, but '{stdio[0]}' makes this a stdio server; keep one kind",
            )
        )
    url = execution.get("url")
    if isinstance(url, str) and not url.startswith(("https://", "http://")):
        problems.append(Problem(source, pointer(["execution", "url"]), f"{short(url)} is not an http(s) URL"))
    if "auth" in doc and "url" not in execution:
        problems.append(
            Problem(
                source,
                pointer(["auth"]),
                "auth is for an HTTP server (execution.url); a stdio server takes its secrets in execution.env",
            )
        )
    return problems


def override_problems(tool: Mapping[str, Any], at: list[str | int], source: str) -> list[Problem]:
    """A `tools` entry of an mcp app adjusts the server's tool of that name."""
    problems: list[Problem] = []
    if tool.get("exclude") is True and len(set(tool) - {"name", "exclude"}) > 0:
        extra = sorted(set(tool) - {"name", "exclude"})
        problems.append(
            Problem(
                source,
                pointer(at),
                f"tool '{tool.get('name')}' is excluded, so {', '.join(extra)} has no effect",
                "warning",
            )
        )
    for key in ("parameters", "inputSchema", "execution", "returns"):
        if key in tool:
            problems.append(
                Problem(
                    source,
                    pointer([*at, key]),
                    f"'{key}' of an mcp app's tool is the server's own; a tool here may set description, "
                    "annotations, timeout, rename or exclude",
                )
            )
    if "undo" in tool:
        problems.append(
            Problem(
                source,
                pointer([*at, "undo"]),
                "an mcp app's tools are the server's own, and an undo is only for tools a descriptor declares; "
                "it has no effect here",
                "warning",
            )
        )
    problems.extend(hint_problems(tool, at, source))
    return problems

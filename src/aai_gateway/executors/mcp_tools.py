"""A server's own tools (`tools/list`) as the gateway's tools, with the descriptor's `tools` applied.

An entry of the descriptor's `tools` names a server tool and may give it another `description`, more
`annotations` (each hint given wins over the server's), a `timeout`, another name (`rename`), or hide
it (`exclude`). The server's input schema is the tool's parameters, its output schema the returns.

A tool whose name or schema the gateway cannot serve safely (`server_tools`) is left out, and said so
in the log and in the app's problems; the server's other tools serve.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from aai_gateway.descriptor import Annotations, Tool
from aai_gateway.descriptor.server_tools import name_problem, schema_verdict
from aai_gateway.problems import short

log = logging.getLogger("aai_gateway.executors.mcp")

SERVER_NAME = "server_name"
"""The option holding the server's own name of a tool (which `rename` may hide)."""

EMPTY = {"type": "object", "properties": {}}


def gateway_tools(
    app_id: str, listed: Sequence[Mapping[str, Any]], overrides: Sequence[Any]
) -> tuple[tuple[Tool, ...], tuple[str, ...]]:
    """The server's tools as the gateway serves them, and what is wrong with those it leaves out or does not
    check fully (one line each, naming the tool)."""
    adjust = {o["name"]: o for o in overrides if isinstance(o, Mapping) and "name" in o}
    tools: list[Tool] = []
    problems: list[str] = []
    taken: set[str] = set()
    twice: list[str] = []
    for raw in listed:
        name = raw.get("name")
        if not isinstance(name, str):
            continue
        own = adjust.get(name, {})
        if own.get("exclude") is True:
            continue
        shown = own.get("rename") or name
        verdict = schema_verdict(raw.get("inputSchema") or EMPTY)
        why = name_problem(shown) or verdict.problem
        if why is not None:
            problems.append(f"tool {short(shown)} is left out: {why}")
            log.warning("%s: tool %s is left out: %s", app_id, short(shown), why)
            continue
        problems.extend(f"tool {shown}: {note}" for note in verdict.notes)
        for note in verdict.notes:
            log.warning("%s: tool %s: %s", app_id, shown, note)
        if shown in taken:
            twice.append(shown)
            continue
        taken.add(shown)
        hints = dict(raw.get("annotations") or {})
        hints.update(own.get("annotations") or {})
        timeout = own.get("timeout")
        returns = raw.get("outputSchema")
        if returns is not None and (trouble := schema_verdict(returns, "output schema").problem) is not None:
            problems.append(f"tool {shown}: {trouble}; it is not used")
            log.warning("%s: tool %s: %s; it is not used", app_id, shown, trouble)
            returns = None
        tools.append(
            Tool(
                name=shown,
                description=own.get("description") or raw.get("description") or raw.get("title") or "",
                parameters=raw.get("inputSchema") or EMPTY,
                returns=returns,
                timeout=float(timeout) if timeout is not None else None,
                options={SERVER_NAME: name},
                annotations=Annotations.from_json({k: v for k, v in hints.items() if isinstance(v, bool)}),
            )
        )
    if twice:
        named = ", ".join(sorted(set(twice))[:10]) + (", …" if len(set(twice)) > 10 else "")
        log.warning("%s: %d tools have the name of a tool before them and are left out: %s", app_id, len(twice), named)
    missing = sorted(set(adjust) - {str(raw.get("name")) for raw in listed})
    if missing:
        log.warning("%s: the descriptor adjusts tools the server does not list: %s", app_id, ", ".join(missing))
    return tuple(tools), tuple(problems)

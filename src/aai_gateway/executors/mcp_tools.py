"""A server's own tools (`tools/list`) as the gateway's tools, with the descriptor's `tools` applied.

An entry of the descriptor's `tools` names a server tool and may give it another `description`, more
`annotations` (each hint given wins over the server's), a `timeout`, another name (`rename`), or hide
it (`exclude`). The server's input schema is the tool's parameters, its output schema the returns.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from aai_gateway.descriptor import Annotations, Tool

log = logging.getLogger("aai_gateway.executors.mcp")

SERVER_NAME = "server_name"
"""The option holding the server's own name of a tool (which `rename` may hide)."""

EMPTY = {"type": "object", "properties": {}}


def gateway_tools(app_id: str, listed: Sequence[Mapping[str, Any]], overrides: Sequence[Any]) -> tuple[Tool, ...]:
    adjust = {o["name"]: o for o in overrides if isinstance(o, Mapping) and "name" in o}
    tools: list[Tool] = []
    taken: set[str] = set()
    for raw in listed:
        name = raw.get("name")
        if not isinstance(name, str):
            continue
        own = adjust.get(name, {})
        if own.get("exclude") is True:
            continue
        shown = own.get("rename") or name
        if shown in taken:
            log.warning("%s: two tools would be called %s; the second is left out", app_id, shown)
            continue
        taken.add(shown)
        hints = dict(raw.get("annotations") or {})
        hints.update(own.get("annotations") or {})
        timeout = own.get("timeout")
        tools.append(
            Tool(
                name=shown,
                description=own.get("description") or raw.get("description") or raw.get("title") or "",
                parameters=raw.get("inputSchema") or EMPTY,
                returns=raw.get("outputSchema"),
                timeout=float(timeout) if timeout is not None else None,
                options={SERVER_NAME: name},
                annotations=Annotations.from_json({k: v for k, v in hints.items() if isinstance(v, bool)}),
            )
        )
    missing = sorted(set(adjust) - {str(raw.get("name")) for raw in listed})
    if missing:
        log.warning("%s: the descriptor adjusts tools the server does not list: %s", app_id, ", ".join(missing))
    return tuple(tools)

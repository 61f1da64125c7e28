"""A search's answer, as the agent reads it (compact text) and as a program does (`structuredContent`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aai_gateway.errors import InvalidParams
from aai_gateway.search.finder import Usage
from aai_gateway.search.index import Found, Hit

MAX_LIMIT = 25
DEFAULT_LIMIT = 5
MAX_QUERY = 1000
"""Characters a query may hold."""


def checked(query: Any, limit: Any) -> tuple[str, int]:
    """`aai_search`'s arguments, or INVALID_PARAMS saying which is wrong and how."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidParams("query must be a non-empty text saying what the user wants done")
    if len(query) > MAX_QUERY:
        raise InvalidParams(f"query is {len(query)} characters long; at most {MAX_QUERY} are taken")
    limit = DEFAULT_LIMIT if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidParams(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}")
    return query, limit


def hit_json(hit: Hit, usage: Mapping[tuple[str, str], Usage]) -> dict[str, Any]:
    op = hit.operation
    used = usage.get((op.app_id, op.tool))
    shown: dict[str, Any] = {
        "app": {"id": op.app_id, "name": op.app_name},
        "tool": op.tool,
        "title": op.tool.replace("_", " "),
        "description": op.description,
        "parameters": dict(op.parameters),
        "annotations": dict(op.annotations),
        "installed": op.installed,
        "runnable": op.runnable,
        "source": op.source,
        "score": hit.score,
    }
    if used is not None:
        shown["reliability"] = used.text()
    if op.why_not:
        shown["whyNot"] = op.why_not
    if hit.also_in:
        shown["alsoIn"] = list(hit.also_in)
    return shown


def answer(
    found: Found, usage: Mapping[tuple[str, str], Usage], *, exec_name: str, install_name: str, discover_name: str
) -> tuple[str, dict[str, Any]]:
    """The text for the model and the structured content of one search."""
    if not found.fits:
        hint = (
            f"Nothing installed, in the library or in the stores fits this request. For a website, try "
            f"{discover_name} with its address; for a desktop app, the user can describe it with "
            "`aai-gateway --generate APP`."
        )
        return hint, {"results": [], "fits": False, "hint": hint}
    results = [hit_json(hit, usage) for hit in found.hits]
    lines = []
    for number, (hit, shown) in enumerate(zip(found.hits, results, strict=True), 1):
        op = hit.operation
        state = "installed" if op.installed else f"not installed ({op.source}): {install_name} {{app: {op.app_id}}}"
        if not op.runnable:
            state += f"; cannot run here: {op.why_not}"
        marks = [k for k, v in op.annotations.items() if v and k in ("readOnlyHint", "destructiveHint")]
        lines.append(f"{number}. {op.app_id} / {op.tool}: {_line(op.description)} [{state}]")
        lines.append(f"   args: {_args(op.parameters)}" + (f"; {', '.join(marks)}" if marks else ""))
        if "reliability" in shown:
            lines.append(f"   {shown['reliability']}")
        if hit.also_in:
            lines.append(f"   also in: {', '.join(hit.also_in)}")
    lines.append(f"Run one with {exec_name} {{app, tool, args}}.")
    return "\n".join(lines), {"results": results, "fits": True}


def _line(text: str, limit: int = 200) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _args(schema: Mapping[str, Any]) -> str:
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or not properties:
        return "none"
    given = schema.get("required")
    required: list[Any] = given if isinstance(given, list) else []
    parts = []
    for name, spec in list(properties.items())[:12]:
        kind = spec.get("type", "any") if isinstance(spec, Mapping) else "any"
        parts.append(f"{name}: {kind}{'' if name in required else '?'}")
    more = f", … ({len(properties) - 12} more)" if len(properties) > 12 else ""
    return ", ".join(parts) + more

"""A batch's consent questions, put in one round before any of its calls runs (MCP 2026-07-28).

A client asked between the rounds of a call is sent a question by ending the call, which it then calls
again whole. For a batch that must happen before any of its calls runs, else the calls that needed no
answer would run again in each round: so every question its calls would ask (an MCP server's command
line, a tool's consent) is gathered first, and all of them are put in one round. An entry that cannot
be looked at now (a malformed one, an app not installed, a tool unknown) is left to the batch to report;
a web app named by its URL is discovered here, as the call would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aai_gateway.consent import Ask, Question
from aai_gateway.consent.launches import asked_by
from aai_gateway.consent.rounds import InputNeeded, key
from aai_gateway.errors import AaiError
from aai_gateway.service import Caller, Gateway


async def ask_first(gateway: Gateway, calls: Sequence[Any], caller: Caller, ask: Ask) -> None:
    """Return when no call of the batch has a question left unanswered; else raise InputNeeded with them all."""
    needed: dict[str, Question] = {}
    for raw in calls:
        if not isinstance(raw, Mapping):
            continue
        try:
            question = await _question(gateway, raw, caller, ask)
            if question is not None:
                await ask(question)
        except InputNeeded as asking:
            needed.update((key(q), q) for q in asking.questions)
        except AaiError:
            continue
    if needed:
        raise InputNeeded(tuple(needed.values()))


async def _question(gateway: Gateway, call: Mapping[str, Any], caller: Caller, ask: Ask) -> Question | None:
    """The consent question a call `{app, tool, args}` of the batch would ask; an MCP server's app is looked
    at live, which puts the question about its command line first."""
    app_id, tool_name, args = call.get("app"), call.get("tool"), call.get("args") or {}
    if not isinstance(app_id, str) or not isinstance(tool_name, str) or not isinstance(args, Mapping):
        return None
    app = await asked_by(caller.name, ask, gateway.live(await gateway.lookup.resolve(app_id)))
    found = app.find_tool(gateway.platform, tool_name)
    if found is None:
        return None
    site = gateway.web_apps.site_of(app)
    return gateway.consent.question(
        caller.name, app, found[1], args, app_key=site.origin if site else app.app_id, marks_trusted=site is None
    )

"""A plan's consent: the user is asked once, before anything runs, for every tool it may call that is not
allowed yet (its steps and its undos), in one question naming them, destructive ones marked."""

from __future__ import annotations

from dataclasses import dataclass

from aai_gateway.calls import Caller, Calls
from aai_gateway.consent import Answer, Ask, Question
from aai_gateway.consent.gate import command
from aai_gateway.consent.summary import safe
from aai_gateway.errors import ConsentRequired, PermissionDenied
from aai_gateway.workflows.checks import Target
from aai_gateway.workflows.plan import WORKFLOWS_APP

RUN = "(run the plan)"
"""The "tool" a plan's question names."""
CHOICES: tuple[tuple[Answer, str], ...] = (
    (Answer.ONCE, "Allow for this run"),
    (Answer.TOOL, "Always allow these tools"),
    (Answer.DENY, "Do not run it"),
)
MOST_SHOWN = 30


@dataclass(frozen=True, slots=True)
class Needed:
    app_key: str
    app_name: str
    tool: str
    destructive: bool


async def agree(name: str, targets: list[Target], calls: Calls, caller: Caller) -> Ask | None:
    """Return the asker the plan's steps use once the user agreed (or nothing needed asking); raise
    PermissionDenied or ConsentRequired, before anything ran, when the plan may not run."""
    needed: dict[tuple[str, str], Needed] = {}
    for target in targets:
        site = calls.apps.web_apps.site_of(target.app)
        key = site.origin if site else target.app.app_id
        tool = target.tool
        verdict = calls.consent.verdict(
            caller.name,
            key,
            tool.name,
            trusted=caller.transport == "cli",
            read_only=tool.read_only and site is None,
            destructive=tool.destructive,
        )
        if verdict.mode == "deny":
            raise PermissionDenied(
                f'{name} was not run, nothing was called: "{safe(caller.name)}" may not run {key}:{tool.name} '
                f"(refused by {verdict.why})"
            )
        if verdict.mode == "ask":
            needed[key, tool.name] = Needed(key, target.app.name, tool.name, tool.destructive)
    if not needed:
        return caller.ask
    wanted = list(needed.values())
    answer = await caller.ask(_question(name, caller.name, wanted)) if caller.ask is not None else None
    if answer is None:
        for need in wanted:
            calls.consent.store.ask_later(
                caller.name, need.app_key, need.tool, (), caller.transport, destructive=need.destructive
            )
        how = "; ".join(f"`{command('allow', caller.name, n.app_key, n.tool)}`" for n in wanted[:MOST_SHOWN])
        why = "the user gave no answer" if caller.ask is not None else "this client cannot ask the user"
        ui = f", or decide the pending requests at {calls.consent.ui_url}" if calls.consent.ui_url else ""
        raise ConsentRequired(
            f"{name} was not run, nothing was called: it needs the user's consent for {_listed(wanted)}, and {why}. "
            f"Approve them with {how}{ui}, then run it again."
        )
    if not answer.allows:
        raise PermissionDenied(f"the user refused {name}; nothing was called")
    asked = set(needed)
    ask = caller.ask
    assert ask is not None

    async def answered(question: Question) -> Answer | None:
        return answer if (question.app, question.tool) in asked else await ask(question)

    return answered


def _question(name: str, caller: str, wanted: list[Needed]) -> Question:
    lines = [f'"{safe(caller)}" wants to run {safe(name)}, which calls {len(wanted)} tool(s) not allowed yet:']
    for need in wanted[:MOST_SHOWN]:
        mark = " [destructive: may delete or overwrite data]" if need.destructive else ""
        lines.append(f"  {safe(need.tool)} of {safe(need.app_name)} ({safe(need.app_key)}){mark}")
    if len(wanted) > MOST_SHOWN:
        lines.append(f"  … and {len(wanted) - MOST_SHOWN} more")
    lines.append("One answer covers all of them; nothing runs unless you allow it.")
    return Question(caller, WORKFLOWS_APP, "plans", RUN, "", (), text="\n".join(lines), choices=CHOICES)


def _listed(wanted: list[Needed]) -> str:
    shown = ", ".join(
        f"{n.app_key}:{n.tool}" + (" (destructive)" if n.destructive else "") for n in wanted[:MOST_SHOWN]
    )
    return shown + (f" and {len(wanted) - MOST_SHOWN} more" if len(wanted) > MOST_SHOWN else "")

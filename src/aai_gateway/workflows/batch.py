"""aai:batch: several independent calls in one request, each run and recorded as `aai:exec` runs one."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aai_gateway.calls import Caller, Calls
from aai_gateway.consent import Answer, Ask, Question
from aai_gateway.errors import AaiError, InvalidParams
from aai_gateway.spelling import spelling
from aai_gateway.text import printable
from aai_gateway.workflows.plan import Plan, Step
from aai_gateway.workflows.runner import Outcome, Run
from aai_gateway.workflows.schema import MAX_BATCH


async def batch(
    calls: Calls, entries_given: Sequence[Any], caller: Caller, *, parallel: bool = True, stop_on_error: bool = False
) -> dict[str, Any]:
    """aai:batch: run `{app, tool, args}` calls, each as `call` runs one, and report on each in order.

    A plan whose steps refer to nothing, their arguments taken as they are: in parallel up to
    maxConcurrentCalls at a time, or one after another. A failed call fails alone; with `stop_on_error`
    the calls not started yet are skipped and those running finish. A malformed entry is that entry's
    INVALID_PARAMS (not recorded, as aai:exec's own arguments are not). The user is asked at most once
    per app and tool of the batch, and the answer serves all of its calls.
    """
    if not 1 <= len(entries_given) <= MAX_BATCH:
        raise InvalidParams(f"calls must hold 1 to {MAX_BATCH} calls, got {len(entries_given)}")
    entries: list[BatchEntry | AaiError] = [_batch_entry(i, raw) for i, raw in enumerate(entries_given)]
    if caller.ask is not None:
        caller = replace(caller, ask=_ask_once(caller.ask, entries, spelling(calls.settings.tool_names).batch))
    steps = tuple(_step(index, entry) for index, entry in enumerate(entries))
    plan = Plan(steps, on_error="stop" if stop_on_error else "continue", timeout=None)
    report = await Run(plan, calls, caller, concurrency=None if parallel else 1).go()
    reports = [_batch_report(entry, outcome) for entry, outcome in zip(entries, report.outcomes, strict=True)]
    counts = {status: sum(r["status"] == status for r in reports) for status in ("ok", "error", "skipped")}
    return {"results": reports, **counts, "durationMs": round(report.duration_ms, 3)}


def _step(index: int, entry: BatchEntry | AaiError) -> Step:
    step_id = f"calls[{index}]"
    if isinstance(entry, AaiError):
        return Step(step_id, "", "", literal=True, refused=entry)
    return Step(step_id, entry.app, entry.tool, entry.args, literal=True)


@dataclass(frozen=True, slots=True)
class BatchEntry:
    app: str
    tool: str
    args: Mapping[str, Any]


def _batch_entry(index: int, raw: Any) -> BatchEntry | AaiError:
    where = f"calls[{index}]"
    if not isinstance(raw, Mapping):
        return InvalidParams(f"{where} must be an object {{app, tool, args}}, got {type(raw).__name__}")
    app, tool, args = raw.get("app"), raw.get("tool"), raw.get("args")
    if not isinstance(app, str) or not app:
        return InvalidParams(f"{where}.app must be a non-empty string (an app id)")
    if not isinstance(tool, str) or not tool:
        return InvalidParams(f"{where}.tool must be a non-empty string (an operation name from the guide)")
    if args is not None and not isinstance(args, Mapping):
        return InvalidParams(f"{where}.args must be an object of named arguments, got {type(args).__name__}")
    extra = sorted(set(raw) - {"app", "tool", "args"})
    if extra:
        return InvalidParams(
            f"{where} has unknown keys {', '.join(printable(str(k)) for k in extra)}; it takes app, tool and args"
        )
    return BatchEntry(app, tool, args or {})


def _batch_report(entry: BatchEntry | AaiError, outcome: Outcome) -> dict[str, Any]:
    report: dict[str, Any] = (
        {"app": printable(entry.app), "tool": printable(entry.tool)} if isinstance(entry, BatchEntry) else {}
    )
    report["status"] = {"ok": "ok", "failed": "error"}.get(outcome.status, "skipped")
    if report["status"] != "skipped":
        report["durationMs"] = round(outcome.duration_ms, 3)
    if outcome.status == "ok":
        report["result"] = outcome.result
    elif outcome.error is not None:
        report["error"] = {"code": outcome.error.code, "type": outcome.error.type, "detail": outcome.error.detail}
    return report


def _ask_once(ask: Ask, entries: Sequence[BatchEntry | AaiError], batch_name: str) -> Ask:
    """The batch's asker: one question per app and tool, whose answer every call of that tool awaits."""
    answers: dict[tuple[str, str], asyncio.Task[Answer | None]] = {}
    shared: dict[tuple[str, str], int] = {}
    for entry in entries:
        if isinstance(entry, BatchEntry):
            shared[entry.app, entry.tool] = shared.get((entry.app, entry.tool), 0) + 1

    async def once(question: Question) -> Answer | None:
        key = (question.app, question.tool)
        if key not in answers:
            count = shared.get(key, 1)
            if count > 1:
                note = (batch_name, f"this answer applies to all {count} calls of {question.tool} in the batch")
                question = replace(question, arguments=(*question.arguments, note))
            answers[key] = asyncio.ensure_future(ask(question))
        return await answers[key]

    return once

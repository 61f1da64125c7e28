"""aai:run: a plan checked whole, agreed to once, run, recorded as one record with a child per call, and
answered as text for the model and as structured content."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from aai_gateway.calls import Caller, Calls, Unsuccessful
from aai_gateway.errors import AaiError, AutomationFailed
from aai_gateway.text import printable
from aai_gateway.workflows.checks import targets
from aai_gateway.workflows.consent import agree
from aai_gateway.workflows.plan import WORKFLOWS_APP, Plan, Problems, parse
from aai_gateway.workflows.runner import Report, Run
from aai_gateway.workflows.saved import Saved
from aai_gateway.workflows.schema import OUTPUT_SCHEMA as OUTPUT_SCHEMA  # noqa: PLC0414 (the answer, described)

MOST_EVENT = 4_096
"""Bytes of JSON of what started a triggered run that its history record keeps."""
MOST_TRIGGER = 500
"""Characters of the trigger's description a run's record keeps."""
MOST_TEXT = 20_000
"""Characters of results the text for the model carries; the structured content has them all."""


async def run_plan(raw: Any, calls: Calls, caller: Caller, *, name: str = "plan", title: str = "the plan") -> Report:
    """Check `raw` whole (nothing runs if any problem is found), ask once for what is not allowed yet, run it."""
    problems = Problems()
    plan = parse(raw, problems)
    problems.raise_any(title)
    assert plan is not None
    return await run_checked(plan, calls, caller, name=name, title=title, problems=problems)


async def run_checked(
    plan: Plan,
    calls: Calls,
    caller: Caller,
    *,
    name: str,
    title: str,
    problems: Problems | None = None,
    inputs: Mapping[str, Any] | None = None,
) -> Report:
    """`plan` run and recorded; `inputs` the JSON Schema of its inputs, whose sensitive fields its records
    mask."""
    problems = problems or Problems()
    schema = recorded_schema(inputs)
    recorded = {"steps": len(plan.steps), "inputs": dict(plan.inputs)}
    if plan.event is not None:
        recorded["event"] = kept_event(plan.event)
    try:
        found = await targets(plan, calls, caller, problems)
        problems.raise_any(title)
        ask = await agree(title, found.all(), calls, caller)
    except AaiError as exc:
        if plan.event is not None:  # a triggered run has nobody to tell: its record says why it did not run
            await refused(calls, name, recorded, caller, exc, schema=schema)
        raise
    if caller.begun is not None:
        caller.begun()

    async def work(run_id: str) -> Report:
        steps_caller = replace(caller, ask=ask, parent=run_id)
        report = await Run(plan, calls, steps_caller, undos=found.declared).go()
        if report.status != "ok":
            raise Unsuccessful(AutomationFailed(text(report)[:2000]), report)
        return report

    report: Report = await calls.run(WORKFLOWS_APP, name, recorded, caller, work, schema=schema, kept=Report.to_json)
    return report


async def run_saved(
    saved: Saved, args: Mapping[str, Any], calls: Calls, caller: Caller, *, event: Any = None
) -> Report:
    """A saved workflow run with `args` as its inputs (checked against its inputs schema, defaults filled in);
    `event` is what started a triggered run, read as `${event…}`."""
    tool = saved.tool()
    try:
        await calls.check_args(tool, args)
    except AaiError as exc:
        if event is not None:
            recorded = {"inputs": dict(args), "event": kept_event(event)}
            await refused(calls, saved.id, recorded, caller, exc, schema=recorded_schema(saved.inputs))
        raise
    defaults = {
        name: spec["default"]
        for name, spec in (saved.inputs.get("properties") or {}).items()
        if isinstance(spec, Mapping) and "default" in spec and name not in args
    }
    plan = replace(saved.plan, inputs={**defaults, **args}, event=event)
    return await run_checked(plan, calls, caller, name=saved.id, title=f"workflow {saved.id}", inputs=saved.inputs)


def recorded_schema(inputs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The schema of a run's record's arguments (`{steps, inputs, event}`) given that of its inputs; the
    inputs' definitions come along, so that their `$ref`s read the same from the record's root."""
    if not inputs:
        return None
    shared = {key: inputs[key] for key in ("$defs", "definitions") if key in inputs}
    return {"type": "object", "properties": {"inputs": dict(inputs)}, **shared}


def kept_event(event: Any) -> Any:
    """What a triggered run's record keeps of what started it: the trigger, when, how many fires were held
    back, and the payload, which is replaced by a note when it is larger than `MOST_EVENT`."""
    if not isinstance(event, Mapping):
        return _kept(event)
    kept = dict(event)
    if isinstance(kept.get("trigger"), str) and len(kept["trigger"]) > MOST_TRIGGER:
        kept["trigger"] = kept["trigger"][:MOST_TRIGGER] + "…"
    if "payload" in kept:
        kept["payload"] = _kept(kept["payload"])
    return _kept(kept)


def _kept(value: Any) -> Any:
    size = len(json.dumps(value, ensure_ascii=False, default=str))
    return value if size <= MOST_EVENT else {"note": f"{size:,} bytes, not kept"}


async def refused(
    calls: Calls,
    name: str,
    recorded: Mapping[str, Any],
    caller: Caller,
    error: AaiError,
    *,
    schema: Mapping[str, Any] | None = None,
) -> None:
    """Record a run that did not start, failed with `error` (which the caller raises on)."""

    async def failing(_: str) -> Any:
        raise error

    with contextlib.suppress(AaiError):
        await calls.run(WORKFLOWS_APP, name, recorded, caller, failing, schema=schema)


def text(report: Report) -> str:
    """The answer as the model reads it: how the plan ended, each step in a word, the output."""
    head = {"ok": "The plan ran", "failed": "The plan failed", "rolledBack": "The plan failed and was rolled back"}
    lines = [f"{head.get(report.status, report.status)} in {report.duration_ms:.0f} ms."]
    for outcome in report.outcomes:
        step = outcome.step
        line = f"- {step.id} ({printable(step.app)}:{printable(step.tool)}): {outcome.status}"
        if outcome.error is not None:
            line += f": {outcome.error.type}: {outcome.error.detail}"
        elif outcome.reason:
            line += f" ({outcome.reason})"
        if outcome.undo is not None and outcome.undo.get("status") == "failed":
            line += f"; its undo failed: {outcome.undo.get('error')}"
        elif outcome.undo is not None and outcome.undo.get("status") == "none":
            line += "; not undone (it has no undo)"
        lines.append(line)
    if report.output_error:
        lines.append(f"The output could not be built: {report.output_error}")
    elif report.status == "ok":
        if report.output is not None:
            lines.append("Output: " + _json(report.output))
        else:
            results = {o.step.id: o.result for o in report.outcomes if o.status == "ok"}
            lines.append("Results: " + _json(results))
    return "\n".join(lines)


def _json(value: Any) -> str:
    shown = json.dumps(value, ensure_ascii=False, default=str)
    return shown if len(shown) <= MOST_TEXT else shown[:MOST_TEXT] + " … (cut; the structured content has it all)"

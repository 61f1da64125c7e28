"""A plan held against the apps before anything runs: every app and tool known, retries only where a tool
may run twice, arguments written in the plan checked against the tool's schema."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aai_gateway.calls import Caller, Calls
from aai_gateway.consent.launches import asked_by
from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.descriptor.argument_check import ArgumentCheck
from aai_gateway.errors import AaiError, ConsentRequired, PermissionDenied
from aai_gateway.memo import PerObject
from aai_gateway.workflows.plan import Plan, Problems, Undo, literal_keys

MOST_CHECKS = 512
"""Argument checks kept for the steps of plans, each for one tool and the required arguments its step builds."""
_checks: PerObject[ArgumentCheck] = PerObject(MOST_CHECKS)


@dataclass(frozen=True, slots=True)
class Target:
    """An app's tool a plan calls, found."""

    app: Descriptor
    binding: Binding
    tool: Tool


@dataclass(frozen=True, slots=True)
class Targets:
    steps: Mapping[str, Target]
    undos: Mapping[str, Target]
    """The undo tool of each step that has one, by step id."""
    declared: Mapping[str, Undo]
    """The undo a step's tool declares in its descriptor, for steps that give none, by step id."""
    reads: Mapping[str, Target]
    """The read run before a step whose declared undo needs one, by step id."""

    def all(self) -> list[Target]:
        return [*self.steps.values(), *self.undos.values(), *self.reads.values()]


async def targets(plan: Plan, calls: Calls, caller: Caller, problems: Problems) -> Targets:
    """The app and tool of every step and undo; what cannot be found is added to `problems`."""
    found: dict[tuple[str, str], Target | None] = {}

    async def find(app_id: str, tool_name: str, where: str) -> Target | None:
        key = (app_id, tool_name)
        if key not in found:
            try:
                app = await asked_by(caller.name, caller.ask, calls.servers.live(await calls.apps.resolve(app_id)))
                found[key] = Target(*calls.apps.tool(app, app_id, tool_name))
            except (ConsentRequired, PermissionDenied):
                raise
            except AaiError as exc:
                problems.add(where, exc.detail)
                found[key] = None
                return None
        return found[key]

    steps: dict[str, Target] = {}
    undos: dict[str, Target] = {}
    declared: dict[str, Undo] = {}
    reads: dict[str, Target] = {}
    for step in plan.steps:
        where = f"steps[id={step.id}]"
        target = await find(step.app, step.tool, where)
        if target is not None:
            steps[step.id] = target
            if step.retries and not (target.tool.read_only or target.tool.annotations.idempotent):
                problems.add(
                    f"{where}.retries",
                    f"{step.app}:{step.tool} is marked neither idempotent nor read-only, so it never runs twice; "
                    "drop retries",
                )
            if not step.literal:
                await _partly(step.args, target.tool, f"{where}.args", problems)
        if step.undo is not None:
            undo = await find(step.undo.app, step.undo.tool, f"{where}.undo")
            if undo is not None:
                undos[step.id] = undo
                await _partly(step.undo.args, undo.tool, f"{where}.undo.args", problems)
        elif target is not None and target.tool.undo is not None:
            own = target.tool.undo
            read = own.before
            before = Undo(step.app, read.tool, read.args) if read is not None else None
            declared[step.id] = Undo(step.app, own.tool, own.args, before)
            undo = await find(step.app, own.tool, f"{where} (its tool's undo)")
            if undo is not None:
                undos[step.id] = undo
            if read is not None and (found_read := await find(step.app, read.tool, f"{where} (its undo's read)")):
                reads[step.id] = found_read
    return Targets(steps, undos, declared, reads)


async def _partly(args: Mapping[str, Any], tool: Tool, where: str, problems: Problems) -> None:
    """The arguments written in the plan against the tool's schema; those built by `${…}` are checked
    when the step runs, so they are neither required nor checked here."""
    written = literal_keys(args)
    schema: Mapping[str, Any] = tool.parameters
    built = set(args) - set(written)
    dropped: tuple[str, ...] = ()
    if built and isinstance(schema.get("required"), list):
        dropped = tuple(sorted(str(name) for name in schema["required"] if name in built))
        schema = {**schema, "required": [name for name in schema["required"] if name not in built]}
    try:
        await _check(tool, schema, dropped).run(written)
    except AaiError as exc:
        problems.add(where, exc.detail)


def _check(tool: Tool, schema: Mapping[str, Any], dropped: tuple[str, ...]) -> ArgumentCheck:
    """The check of `schema`, `tool`'s parameters less the required names `dropped`, built once: building one
    compiles the schema, which costs more than a step's own call."""
    kept = _checks.get(tool, dropped)
    return kept if kept is not None else _checks.put(tool, ArgumentCheck(tool.name, schema), dropped)

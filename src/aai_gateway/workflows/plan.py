"""A plan as data: its steps, what each refers to, and every problem that can be found before anything runs.

A plan is `{steps, output?, onError?, inputs?, timeout?}`; a step is `{id, app, tool, args?, if?,
forEach?, timeout?, retries?, undo?}`. `${…}` queries (see `aai_gateway.expressions`) read
`{"inputs": …, "steps": {"<id>": {"args", "result", "error"}}, "item": …}`; a step runs once every
step it refers to is done.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from aai_gateway.errors import AaiError, InvalidParams
from aai_gateway.expressions import ExpressionError, check, has_queries, heads, pieces
from aai_gateway.history.record import RUN_APP
from aai_gateway.text import printable

WORKFLOWS_APP = RUN_APP
"""The app saved workflows are served as, and the app a plan's run is recorded under."""
MAX_STEPS = 100
MAX_ITEMS = 1_000
"""Items one `forEach` may run over."""
MAX_RETRIES = 5
MAX_PLAN_BYTES = 1_000_000
"""The plan as JSON: arguments that pass large values along are built from results, not written in."""
MAX_TIMEOUT = 3_600.0
DEFAULT_TIMEOUT = 300.0
"""Seconds a whole plan may take unless it says otherwise."""
MOST_PROBLEMS = 20
ON_ERROR = ("rollback", "stop", "continue")
STEP_KEYS = frozenset({"id", "app", "tool", "args", "if", "forEach", "timeout", "retries", "undo"})
PLAN_KEYS = frozenset({"steps", "output", "onError", "inputs", "timeout"})
UNDO_KEYS = frozenset({"app", "tool", "args"})
STEP_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
ROOTS = frozenset({"inputs", "steps", "event"})
"""What queries read: the inputs, earlier steps, and the event that started a triggered workflow (else null)."""
UNDO_ROOTS = ROOTS | {"args", "result", "before"}


@dataclass(frozen=True, slots=True)
class Undo:
    """How to put a step back: a call of `app`'s `tool`, its args read from the plan and the step."""

    app: str
    tool: str
    args: Mapping[str, Any]
    before: Undo | None = None
    """A read run just before the step, whose result the undo's args read as `before` (a descriptor's
    declaration may have one)."""


@dataclass(frozen=True, slots=True)
class Step:
    id: str
    app: str
    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    when: Any = None
    """`if`: None (always), or a template whose value's truth decides (JMESPath truth: false, null and
    empty values are false)."""
    for_each: Any = None
    timeout: float | None = None
    retries: int = 0
    undo: Undo | None = None
    needs: frozenset[str] = frozenset()
    """The steps it refers to, which must be done before it runs."""
    literal: bool = False
    """Arguments taken as they are, `${` and all (aai:batch's calls)."""
    refused: AaiError | None = None
    """Why it fails without running (a malformed aai:batch entry)."""


@dataclass(frozen=True, slots=True)
class Plan:
    steps: tuple[Step, ...]
    output: Any = None
    on_error: str = "rollback"
    inputs: Mapping[str, Any] = field(default_factory=dict)
    timeout: float | None = DEFAULT_TIMEOUT
    """Seconds the whole plan may take; None for no bound but each call's own (aai:batch)."""
    event: Any = None
    """What started a triggered workflow: `{trigger, payload, at}`, read as `${event…}`."""

    def step(self, step_id: str) -> Step:
        return next(s for s in self.steps if s.id == step_id)


class Problems:
    """Problems found in a plan, each naming where; raised together as one INVALID_PARAMS."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, where: str, what: str) -> None:
        self.found.append(f"{where}: {what}")

    def raise_any(self, name: str = "the plan") -> None:
        if not self.found:
            return
        shown = self.found[:MOST_PROBLEMS]
        more = f" (and {len(self.found) - len(shown)} more)" if len(self.found) > len(shown) else ""
        raise InvalidParams(
            f"{name} was not run, nothing was called: {len(self.found)} problem(s): " + "; ".join(shown) + more
        )


def parse(raw: Any, problems: Problems) -> Plan | None:
    """The plan in `raw`, with every problem of its form added to `problems` (None when it has any)."""
    if not isinstance(raw, Mapping):
        problems.add("plan", f"must be an object {{steps, output?, onError?}}, got {type(raw).__name__}")
        return None
    size = _size(raw)
    if size > MAX_PLAN_BYTES:
        problems.add(
            "plan", f"is {size:,} bytes of JSON, more than {MAX_PLAN_BYTES:,}; pass large values along with ${{…}}"
        )
        return None
    for key in sorted(set(raw) - PLAN_KEYS, key=str):
        problems.add(printable(str(key))[:64], f"is not a key of a plan; it takes {', '.join(sorted(PLAN_KEYS))}")
    on_error = raw.get("onError", "rollback")
    if on_error not in ON_ERROR:
        problems.add("onError", f"must be one of {', '.join(ON_ERROR)}, got {_shown(on_error)}")
    inputs = raw.get("inputs", {})
    if not isinstance(inputs, Mapping):
        problems.add("inputs", f"must be an object of named values, got {type(inputs).__name__}")
        inputs = {}
    timeout = _seconds(raw.get("timeout", DEFAULT_TIMEOUT), "timeout", problems) or DEFAULT_TIMEOUT
    raw_steps = raw.get("steps")
    if not isinstance(raw_steps, list) or not 1 <= len(raw_steps) <= MAX_STEPS:
        got = f"{len(raw_steps)} steps" if isinstance(raw_steps, list) else type(raw_steps).__name__
        problems.add("steps", f"must be an array of 1 to {MAX_STEPS} steps, got {got}")
        return None
    steps = [s for i, raw_step in enumerate(raw_steps) if (s := _step(raw_step, f"steps[{i}]", problems))]
    ids = [s.id for s in steps]
    for step_id in sorted({i for i in ids if ids.count(i) > 1}):
        problems.add(f"steps[id={step_id}]", "the id is used by more than one step; each step needs its own")
    output = raw.get("output")
    output_needs = _needs(output, "output", problems, ROOTS)
    known = set(ids)
    for step in steps:
        for missing in sorted(step.needs - known):
            problems.add(f"steps[id={step.id}]", f"refers to steps.{missing}, but no step has the id '{missing}'")
        if step.id in step.needs:
            problems.add(f"steps[id={step.id}]", "refers to its own result; a step can read only earlier steps")
    for missing in sorted(output_needs - known):
        problems.add("output", f"refers to steps.{missing}, but no step has the id '{missing}'")
    if not problems.found:
        cycle = _cycle({s.id: s.needs for s in steps})
        if cycle:
            problems.add("steps", f"refer to each other in a cycle ({' → '.join(cycle)}), so none of them could start")
    if problems.found:
        return None
    return Plan(tuple(steps), output, str(on_error), inputs, timeout)


def _step(raw: Any, where: str, problems: Problems) -> Step | None:
    if not isinstance(raw, Mapping):
        problems.add(where, f"must be an object {{id, app, tool, args}}, got {type(raw).__name__}")
        return None
    step_id = raw.get("id")
    if isinstance(step_id, str) and STEP_ID.fullmatch(step_id):
        where = f"steps[id={step_id}]"
    else:
        problems.add(where, f"id must be a name of letters, digits, _ and - (at most 64), got {_shown(step_id)}")
        step_id = None
    for key in sorted(set(raw) - STEP_KEYS, key=str):
        problems.add(
            f"{where}.{printable(str(key))[:64]}", f"is not a key of a step; it takes {', '.join(sorted(STEP_KEYS))}"
        )
    app, tool = raw.get("app"), raw.get("tool")
    if not isinstance(app, str) or not app:
        problems.add(f"{where}.app", "must be a non-empty string (an app id)")
    if not isinstance(tool, str) or not tool:
        problems.add(f"{where}.tool", "must be a non-empty string (an operation name from the app's guide)")
    args = raw.get("args", {})
    if not isinstance(args, Mapping):
        problems.add(f"{where}.args", f"must be an object of named arguments, got {type(args).__name__}")
        args = {}
    for_each = raw.get("forEach")
    roots = ROOTS | ({"item"} if for_each is not None else set())
    needs = _needs(args, f"{where}.args", problems, roots)
    when = raw.get("if")
    if when is not None:
        if isinstance(when, bool) or (isinstance(when, str) and _one_query(when)):
            needs |= _needs(when, f"{where}.if", problems, roots)
        else:
            problems.add(
                f"{where}.if", f'must be one query such as "${{steps.read.result.playing}}", got {_shown(when)}'
            )
    if for_each is not None:
        if isinstance(for_each, str) and _one_query(for_each):
            needs |= _needs(for_each, f"{where}.forEach", problems, ROOTS)
        elif isinstance(for_each, list):
            if len(for_each) > MAX_ITEMS:
                problems.add(f"{where}.forEach", f"holds {len(for_each)} items, more than {MAX_ITEMS}")
        else:
            problems.add(
                f"{where}.forEach",
                f'must be a list or one query such as "${{steps.list.result}}", got {_shown(for_each)}',
            )
    timeout = _seconds(raw.get("timeout"), f"{where}.timeout", problems)
    retries = raw.get("retries", 0)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        problems.add(f"{where}.retries", f"must be a whole number from 0 to {MAX_RETRIES}, got {_shown(retries)}")
        retries = 0
    undo = None
    if raw.get("undo") is not None:
        undo = _undo(raw["undo"], f"{where}.undo", app if isinstance(app, str) else "", problems, roots)
        if undo is not None:
            needs |= _needs(undo.args, f"{where}.undo.args", Problems(), UNDO_ROOTS | roots)
    if step_id is None or not isinstance(app, str) or not isinstance(tool, str):
        return None
    return Step(step_id, app, tool, args, when, for_each, timeout, retries, undo, frozenset(needs))


def _undo(raw: Any, where: str, app: str, problems: Problems, roots: frozenset[str] | set[str]) -> Undo | None:
    if not isinstance(raw, Mapping):
        problems.add(where, f"must be an object {{tool, args}}, got {type(raw).__name__}")
        return None
    for key in sorted(set(raw) - UNDO_KEYS, key=str):
        problems.add(f"{where}.{printable(str(key))[:64]}", "is not a key of an undo; it takes tool, args and app")
    tool, args, undo_app = raw.get("tool"), raw.get("args", {}), raw.get("app", app)
    if not isinstance(tool, str) or not tool:
        problems.add(f"{where}.tool", "must be a non-empty string (the tool that puts the step back)")
        return None
    if not isinstance(undo_app, str) or not undo_app:
        problems.add(f"{where}.app", "must be a non-empty string (an app id)")
        return None
    if not isinstance(args, Mapping):
        problems.add(f"{where}.args", f"must be an object of named arguments, got {type(args).__name__}")
        return None
    _needs(args, f"{where}.args", problems, UNDO_ROOTS | roots)
    return Undo(undo_app, tool, args)


def _needs(template: Any, where: str, problems: Problems, roots: frozenset[str] | set[str]) -> set[str]:
    """The step ids `template` refers to; a query that does not parse, or reads from the top something
    that is none of `roots`, is a problem."""
    needs: set[str] = set()
    try:
        for at, expression in check(template, where):
            for path in heads(expression):
                if not path:
                    continue  # `@`, the whole context
                if path[0] not in roots:
                    problems.add(at, f"${{…}} reads '{path[0]}', which is none of {', '.join(sorted(roots))}")
                elif path[0] == "steps":
                    if len(path) < 2:
                        problems.add(at, "${steps} must name a step: ${steps.<id>.result}")
                    else:
                        needs.add(path[1])
    except ExpressionError as exc:
        problems.add(where, str(exc).removeprefix(f"{where}: "))
    return needs


def _one_query(text: str) -> bool:
    try:
        parts = pieces(text)
    except ExpressionError:
        return True  # the parse reports it
    return len(parts) == 1 and parts[0].expression is not None


def _seconds(value: Any, where: str, problems: Problems) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_TIMEOUT:
        problems.add(where, f"must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}, got {_shown(value)}")
        return None
    return float(value)


def _cycle(needs: Mapping[str, frozenset[str]]) -> list[str] | None:
    """A cycle of references, as the ids along it, if there is one."""
    state: dict[str, int] = {}
    trail: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        trail.append(node)
        for nxt in sorted(needs.get(node, ())):
            if state.get(nxt) == 1:
                return [*trail[trail.index(nxt) :], nxt]
            if nxt in needs and nxt not in state and (found := visit(nxt)):
                return found
        trail.pop()
        state[node] = 2
        return None

    for start in needs:
        if start not in state and (found := visit(start)):
            return found
    return None


def order(plan: Plan) -> Iterator[Step]:
    """The steps in an order where each comes after those it refers to."""
    done: set[str] = set()
    remaining = list(plan.steps)
    while remaining:
        ready = [s for s in remaining if s.needs <= done]
        for step in ready:
            done.add(step.id)
            yield step
        remaining = [s for s in remaining if s.id not in done]


def _size(raw: Any) -> int:
    try:
        return len(json.dumps(raw, ensure_ascii=False, default=str))
    except (ValueError, RecursionError):
        return MAX_PLAN_BYTES + 1


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else repr(value)
    return printable(text)[:80]


def literal_keys(args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments written as they are (no `${…}` anywhere in them)."""
    return {key: value for key, value in args.items() if not has_queries(value)}

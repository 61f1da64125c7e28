"""Running a checked plan: each step as soon as the steps it refers to are done, independent ones side by
side, and on a failure the steps already done undone in reverse order (`onError: "rollback"`)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from aai_gateway.calls import Caller, Calls
from aai_gateway.errors import (
    AaiError,
    AppNotFound,
    AutomationFailed,
    ConsentRequired,
    InvalidParams,
    PermissionDenied,
    Timeout,
    ToolNotFound,
)
from aai_gateway.expressions import ExpressionError, has_queries, render
from aai_gateway.workflows.plan import Plan, Step, Undo
from aai_gateway.workflows.schema import MAX_ITEMS

log = logging.getLogger("aai_gateway.workflows")

MAX_ARGS_BYTES = 4_000_000
"""A step's arguments once built from earlier results, as JSON."""
UNDO_BUDGET = 120.0
"""Seconds the undos of a rollback may take together, after the plan's own time ran out or not."""
NEVER_RETRIED = (InvalidParams, PermissionDenied, ConsentRequired, ToolNotFound, AppNotFound)
"""Failures a second try cannot change."""


@dataclass(slots=True)
class Done:
    """One call a step made that succeeded: what an undo of it reads."""

    args: Any
    result: Any
    before: Any = None
    item: Any = None


@dataclass(slots=True)
class Outcome:
    step: Step
    status: str = "pending"
    """ok, failed, skipped or undone (pending and running while the plan runs)."""
    args: Any = None
    result: Any = None
    error: AaiError | None = None
    reason: str = ""
    duration_ms: float = 0.0
    done: list[Done] = field(default_factory=list)
    undo: dict[str, Any] | None = None
    finished: int = 0

    def seen(self) -> dict[str, Any]:
        """The step as later queries read it: `steps.<id>.{args, result, error, status}`."""
        error = {"type": self.error.type, "detail": self.error.detail} if self.error is not None else None
        return {"args": self.args, "result": self.result, "error": error, "status": self.status}

    def report(self) -> dict[str, Any]:
        step = self.step
        report: dict[str, Any] = {"id": step.id, "app": step.app, "tool": step.tool, "status": self.status}
        if self.status not in ("skipped", "pending"):
            report["durationMs"] = round(self.duration_ms, 3)
        if self.status in ("ok", "undone"):
            report["result"] = self.result
        if self.error is not None:
            report["error"] = {"code": self.error.code, "type": self.error.type, "detail": self.error.detail}
        if self.reason:
            report["reason"] = self.reason
        if self.undo is not None:
            report["undo"] = self.undo
        return report


@dataclass(frozen=True, slots=True)
class Report:
    status: str
    """ok, failed (onError continue or stop), or rolledBack."""
    outcomes: list[Outcome]
    output: Any
    duration_ms: float
    output_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        report = {
            "status": self.status,
            "output": self.output,
            "steps": [o.report() for o in self.outcomes],
            "durationMs": round(self.duration_ms, 3),
        }
        return report | ({"outputError": self.output_error} if self.output_error else {})


_UNDOING: set[asyncio.Future[None]] = set()
"""Rollbacks of cancelled runs under way, kept from the garbage collector while their caller is gone."""


class Run:
    """One run of a plan. `undos` are the descriptors' own undo declarations, by step id, for steps that
    give none; `concurrency` bounds the steps running at once (1 runs them in order)."""

    def __init__(
        self,
        plan: Plan,
        calls: Calls,
        caller: Caller,
        *,
        undos: Mapping[str, Undo] | None = None,
        concurrency: int | None = None,
    ) -> None:
        self.plan = plan
        self.calls = calls
        self.caller = caller
        self.undos = dict(undos or {})
        self.concurrency = concurrency or calls.settings.max_concurrent_calls
        self.outcomes = {s.id: Outcome(s) for s in plan.steps}
        self._waiting = list(self.outcomes.values())
        """Steps not started yet, in plan order."""
        self._finished = 0
        self._items = asyncio.Semaphore(calls.settings.max_concurrent_calls)

    def context(self, **more: Any) -> dict[str, Any]:
        steps = {i: o.seen() for i, o in self.outcomes.items() if o.status not in ("pending", "running")}
        return {"inputs": self.plan.inputs, "steps": steps, "event": self.plan.event, **more}

    async def go(self) -> Report:
        started = time.perf_counter()
        limit = self.plan.timeout
        deadline = None if limit is None else asyncio.get_running_loop().time() + limit
        try:
            failed = await self._steps(deadline)
        except asyncio.CancelledError:
            # stopped by its caller: what ran is undone as on any failure, then the stop goes on; shielded, as
            # the SDK's cancel scopes cancel again at every await (the undos then finish on their own)
            if self.plan.on_error == "rollback":
                undoing = asyncio.ensure_future(self._rollback())
                _UNDOING.add(undoing)
                undoing.add_done_callback(_UNDOING.discard)
                await asyncio.shield(undoing)
            raise
        status = "ok"
        if failed is not None:
            status = "failed"
            if self.plan.on_error == "rollback":
                await self._rollback()
                status = "rolledBack"
        output, output_error = None, None
        if status == "ok" and self.plan.output is not None:
            try:
                output = render(self.plan.output, self.context(), "output")
            except ExpressionError as exc:
                status, output_error = "failed", str(exc)
        outcomes = [self.outcomes[s.id] for s in self.plan.steps]
        return Report(status, outcomes, output, (time.perf_counter() - started) * 1000, output_error)

    async def _steps(self, deadline: float | None) -> Outcome | None:
        """Run every step that can run; the first step that failed (None if none did)."""
        loop = asyncio.get_running_loop()
        running: dict[asyncio.Task[None], Outcome] = {}
        first_failure: Outcome | None = None
        stopping = False
        while True:
            ready = [] if stopping else self._ready(len(running))
            if len(ready) == 1 and not running:
                # The one step that can run now: awaited here, without a task and a wait for it (a chain of
                # steps, one after the other, is the common plan). It ends as it would as a task.
                (outcome,) = ready
                if not await self._alone(outcome, deadline):
                    stopping = True
                if outcome.status == "failed":
                    first_failure = first_failure or outcome
                    if self.plan.on_error != "continue":
                        stopping = True
                continue
            for outcome in ready:
                running[asyncio.ensure_future(self._step(outcome))] = outcome
            if not running:
                break
            remaining = None if deadline is None else max(deadline - loop.time(), 0)
            try:
                done, _ = await asyncio.wait(running, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                for task in running:
                    task.cancel()
                await asyncio.gather(*running, return_exceptions=True)
                for outcome in running.values():
                    self._cancelled(outcome)
                raise
            if not done:  # the plan's time is up: what still runs is stopped and counts as failed
                for task, outcome in running.items():
                    task.cancel()
                    outcome.error = self._timed_out()
                await asyncio.gather(*running, return_exceptions=True)
                for outcome in running.values():
                    self._finish(outcome, "failed")
                    first_failure = first_failure or outcome
                running.clear()
                stopping = True
                continue
            for task in done:
                outcome = running.pop(task)
                if not task.cancelled() and (signal := task.exception()) is not None:
                    # not an outcome (`_step` keeps AaiErrors): a call that ended to ask the user first
                    # (consent.rounds.InputNeeded) ends the run, and the steps under way with it
                    for other in running:
                        other.cancel()
                    await asyncio.gather(*running, return_exceptions=True)
                    raise signal
                if outcome.status == "failed":
                    first_failure = first_failure or outcome
                    if self.plan.on_error != "continue":
                        stopping = True
        for outcome in self.outcomes.values():
            if outcome.status == "pending":
                failure = first_failure.step.id if first_failure else "an earlier step"
                outcome.status, outcome.reason = "skipped", f"not started: step {failure} failed"
        return first_failure

    async def _alone(self, outcome: Outcome, deadline: float | None) -> bool:
        """Run a step that runs alone; False when the plan's time ran out during it."""
        try:
            if deadline is None:
                await self._step(outcome)
                return True
            limit = asyncio.timeout_at(deadline)
            if asyncio.get_running_loop().time() >= deadline:  # not started at all, as a task would not be
                outcome.error = self._timed_out()
                self._finish(outcome, "failed")
                return False
            try:
                async with limit:
                    await self._step(outcome)
            except TimeoutError:
                if not limit.expired():
                    raise
                outcome.error = self._timed_out()
                self._finish(outcome, "failed")
                return False
            return True
        except asyncio.CancelledError:
            self._cancelled(outcome)
            raise

    def _cancelled(self, outcome: Outcome) -> None:
        outcome.error = outcome.error or AutomationFailed("the run was cancelled during this step")
        self._finish(outcome, "failed")

    def _timed_out(self) -> Timeout:
        return Timeout(f"the plan's timeout of {self.plan.timeout:g} s ran out during this step")

    def _ready(self, running: int) -> list[Outcome]:
        """The waiting steps whose steps are done, in plan order, while there is room beside the `running`
        ones; marked running, for the caller to start."""
        ready: list[Outcome] = []
        progress = True
        while progress and self._waiting:
            progress = False
            still: list[Outcome] = []
            for index, outcome in enumerate(self._waiting):
                if running + len(ready) >= self.concurrency:
                    still.extend(self._waiting[index:])
                    break
                needs = [self.outcomes[n] for n in outcome.step.needs]
                if any(n.status in ("pending", "running") for n in needs):
                    still.append(outcome)
                    continue
                blocked = next((n for n in needs if n.status in ("failed", "skipped")), None)
                if blocked is not None:
                    why = "failed" if blocked.status == "failed" else "was skipped"
                    outcome.status, outcome.reason = "skipped", f"needs step {blocked.step.id}, which {why}"
                    progress = True
                    continue
                outcome.status = "running"
                ready.append(outcome)
            self._waiting = still
        return ready

    def _finish(self, outcome: Outcome, status: str) -> None:
        self._finished += 1
        outcome.status, outcome.finished = status, self._finished

    async def _step(self, outcome: Outcome) -> None:
        step = outcome.step
        started = time.perf_counter()
        try:
            if step.refused is not None:
                raise step.refused
            if step.when is not None:
                decided = render(step.when, self.context(), f"steps[id={step.id}].if")
                if not _truthy(decided):
                    outcome.reason = f"if was {json.dumps(decided, ensure_ascii=False, default=str)[:80]}"
                    self._finish(outcome, "skipped")
                    return
            if step.for_each is None:
                outcome.args, outcome.result = await self._call(outcome, self.context)
            else:
                await self._each(outcome)
        except AaiError as exc:
            outcome.error = exc
        except ExpressionError as exc:
            outcome.error = InvalidParams(str(exc))
        outcome.duration_ms = (time.perf_counter() - started) * 1000
        self._finish(outcome, "failed" if outcome.error is not None else "ok")

    async def _each(self, outcome: Outcome) -> None:
        step = outcome.step
        where = f"steps[id={step.id}].forEach"
        items = render(step.for_each, self.context(), where)
        if not isinstance(items, list):
            raise InvalidParams(f"{where} gave {type(items).__name__}, not a list to run the step over")
        if len(items) > MAX_ITEMS:
            raise InvalidParams(f"{where} gave {len(items)} items, more than {MAX_ITEMS}")
        args: list[Any] = [None] * len(items)
        results: list[Any] = [None] * len(items)

        async def one(index: int) -> None:
            async with self._items:
                args[index], results[index] = await self._call(
                    outcome,
                    lambda: self.context(item=items[index]),
                    item=items[index],
                    label=f"{step.id}[{index}]",
                )

        tried = await asyncio.gather(*(one(i) for i in range(len(items))), return_exceptions=True)
        outcome.args, outcome.result = args, results
        failure = next((t for t in tried if isinstance(t, BaseException)), None)
        if failure is not None:
            raise failure

    async def _call(
        self,
        outcome: Outcome,
        context: Callable[[], dict[str, Any]],
        *,
        item: Any = None,
        label: str | None = None,
    ) -> tuple[Any, Any]:
        """One call of the step's tool; it is kept in `outcome.done` for the undo once it succeeded. `context`
        is built only when the arguments read something (a batch's never do)."""
        step = outcome.step
        label = label or step.id
        args: Mapping[str, Any] = step.args
        if not step.literal and has_queries(step.args):
            args = _built(step.args, context(), f"steps[id={step.id}].args")
            _bounded(args, f"steps[id={step.id}].args")
        undo = step.undo or self.undos.get(step.id)
        before = None
        if undo is not None and undo.before is not None:
            read = undo.before
            read_args = _built(read.args, {"args": args}, f"steps[id={step.id}].undo.before.args")
            before = await self.calls.call(read.app, read.tool, read_args, self._child(f"{label} (before)"))
        result = await self._tried(step, args, self._child(label))
        outcome.done.append(Done(args, result, before, item))
        return args, result

    async def _tried(self, step: Step, args: Any, caller: Caller) -> Any:
        attempt = 0
        while True:
            try:
                if step.timeout is None:
                    return await self.calls.call(step.app, step.tool, args, caller)
                try:
                    async with asyncio.timeout(step.timeout):
                        return await self.calls.call(step.app, step.tool, args, caller)
                except TimeoutError:
                    raise Timeout(f"step {step.id} took longer than its timeout of {step.timeout:g} s") from None
            except NEVER_RETRIED:
                raise
            except AaiError as exc:
                if attempt >= step.retries:
                    raise
                attempt += 1
                log.info("step %s failed (%s), trying again (%d of %d)", step.id, exc.type, attempt, step.retries)

    def _child(self, label: str) -> Caller:
        return replace(self.caller, step=label)

    async def _rollback(self) -> None:
        """Undo every call already done, newest first; a failing undo is reported and the others still run."""
        done = sorted((o for o in self.outcomes.values() if o.done), key=lambda o: o.finished, reverse=True)
        try:
            async with asyncio.timeout(UNDO_BUDGET):
                for outcome in done:
                    await self._undo(outcome)
        except TimeoutError:
            for outcome in done:
                if outcome.undo is None:
                    outcome.undo = {
                        "status": "failed",
                        "error": f"not undone: the undos took more than {UNDO_BUDGET:g} s",
                    }

    async def _undo(self, outcome: Outcome) -> None:
        step = outcome.step
        undo = step.undo or self.undos.get(step.id)
        if undo is None:
            outcome.undo = {"status": "none", "reason": f"{step.app}:{step.tool} has no undo"}
            return
        failures: list[str] = []
        for index, done in reversed(list(enumerate(outcome.done))):
            label = f"{step.id}[{index}] (undo)" if step.for_each is not None else f"{step.id} (undo)"
            more = {"args": done.args, "result": done.result, "before": done.before}
            if step.for_each is not None:
                more["item"] = done.item
            try:
                args = _built(undo.args, self.context(**more), f"steps[id={step.id}].undo.args")
                await self.calls.call(undo.app, undo.tool, args, self._child(label))
            except AaiError as exc:
                failures.append(f"{exc.type}: {exc.detail}")
            except ExpressionError as exc:
                failures.append(str(exc))
        if failures:
            outcome.undo = {"status": "failed", "tool": undo.tool, "error": "; ".join(failures)[:2000]}
            return
        outcome.undo = {"status": "ok", "tool": undo.tool}
        if outcome.status == "ok":
            outcome.status = "undone"


def _built(template: Mapping[str, Any], context: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A step's arguments built from `template`; an argument whose query gives null is left out, so an
    optional input not given leaves the tool's own default."""
    built = render(template, context, where)
    return {key: value for key, value in built.items() if value is not None or not has_queries(template[key])}


def _truthy(value: Any) -> bool:
    """JMESPath's truth: false, null, and empty strings, lists and objects are false (0 is true)."""
    if value is None or value is False:
        return False
    return not (isinstance(value, str | list | dict) and not value)


def _bounded(args: Any, where: str) -> None:
    size = len(json.dumps(args, ensure_ascii=False, default=str))
    if size > MAX_ARGS_BYTES:
        raise InvalidParams(f"{where} came to {size:,} bytes of JSON, more than {MAX_ARGS_BYTES:,}")

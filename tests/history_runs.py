"""A run of a plan in the history, written as the plan engine writes it: through the Recorder, a record per
step and per undo pointing at the run (each written as it ends), then the run's own record (app aai.workflows)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from aai_gateway.errors import AaiError, AutomationFailed
from aai_gateway.history import HistoryStore, Recorder, Redactor
from aai_gateway.history.record import RUN_APP
from aai_gateway.history.recorder import Pending


@dataclass(frozen=True, slots=True)
class Step:
    label: str
    app: str
    tool: str
    ms: float
    error: AaiError | None = None


STEPS = (
    Step("read", "dev.aai.echo", "echo", 4.0),
    Step("notify[0]", "dev.aai.notes", "add", 6.5),
    Step("notify[1]", "dev.aai.notes", "add", 7.25),
    Step("lower", "dev.aai.volume", "set", 3.0, AutomationFailed("the mixer refused")),
    Step("notify[1] (undo)", "dev.aai.notes", "remove", 2.0),
)
"""A run that failed at `lower` and undid what it had done (one undo shown)."""


def nowhere(app: str, tool: str) -> Any:
    raise LookupError(f"{app}:{tool}")


def record_run(
    store: HistoryStore,
    run_id: str,
    at: datetime,
    *,
    steps: tuple[Step, ...] = STEPS,
    workflow: str = "morning",
    caller: str = "claude-code",
    with_run: bool = True,
    gap: timedelta = timedelta(seconds=1),
) -> list[str]:
    """Record a run started at `at` and its steps, `gap` apart; the steps' call ids, in order.
    Without `with_run`, the run's own record is left out (a run under way, or ended with its gateway)."""
    recorder = Recorder(store, Redactor(), nowhere)

    def begin(call_id: str, app: str, tool: str, moment: datetime, **more: Any) -> Pending:
        pending = recorder.begin(call_id, caller=caller, transport="stdio", app=app, tool=tool, args={"n": 1}, **more)
        return replace(pending, time=moment)

    async def run() -> list[str]:
        ids = []
        for n, step in enumerate(steps):
            call_id = f"{run_id}-{n}"
            pending = begin(call_id, step.app, step.tool, at + gap * (n + 1), parent=run_id, step=step.label)
            if step.error is None:
                await recorder.ok(pending, {"done": step.label}, step.ms)
            else:
                await recorder.failed(pending, step.error, step.ms)
            ids.append(call_id)
        if with_run:
            pending = begin(run_id, RUN_APP, workflow, at)
            failed = next((s for s in steps if s.error is not None), None)
            total = sum(s.ms for s in steps) + 1.0
            if failed is None:
                await recorder.ok(pending, {"steps": len(steps)}, total)
            else:
                error = AutomationFailed(f"step {failed.label} failed; the steps before it were undone")
                await recorder.failed(pending, error, total)
        return ids

    return asyncio.run(run())

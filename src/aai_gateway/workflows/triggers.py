"""Saved workflows started by what happens: an app's event, a timer, a file change.

Only a long-lived gateway (`aai-gateway serve`) runs triggers, and only for workflows the user approved
as they are now (see `approvals`). Per trigger: a debounce (a burst starts one run, with the last
payload), at most `maxPerMinute` runs a minute, and no run while the last one still runs unless
`overlap`; what is held back is counted, and the next run's history record says how many. Each run is
recorded as a run of that workflow, with its trigger and payload.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import watchfiles

from aai_gateway.calls import Caller, Calls
from aai_gateway.consent import Answer, Question
from aai_gateway.descriptor import Descriptor, Tool
from aai_gateway.errors import AaiError
from aai_gateway.events.hub import Events
from aai_gateway.workflows.approvals import Approvals, fingerprint
from aai_gateway.workflows.consent import RUN
from aai_gateway.workflows.run import run_saved
from aai_gateway.workflows.saved import Saved, Shelf, Trigger
from aai_gateway.workflows.schedule import local_zone

log = logging.getLogger("aai_gateway.workflows")

CALLER = "trigger"
"""The caller name a triggered run has in the history and for consent rules."""
REFRESH = 5.0
"""Seconds between looks at the approvals, which another process (the CLI) may change."""
MOST_CHANGES = 100
"""File changes one payload lists."""

FindTool = Callable[[str, str], Tool | None]
Now = Callable[[], datetime]


def tools_of(saved: Saved, find: FindTool) -> list[str]:
    """Every `app:tool` the workflow may run: its steps, their undos and the reads those undos need."""
    found: list[str] = []
    for step in saved.plan.steps:
        found.append(f"{step.app}:{step.tool}")
        if step.undo is not None:
            found.append(f"{step.undo.app}:{step.undo.tool}")
            continue
        tool = find(step.app, step.tool)
        if tool is not None and tool.undo is not None:
            found.append(f"{step.app}:{tool.undo.tool}")
            if tool.undo.before is not None:
                found.append(f"{step.app}:{tool.undo.before.tool}")
    return sorted(set(found))


@dataclass
class _State:
    """One trigger's bookkeeping while it is watched."""

    recent: deque[float] = field(default_factory=deque)
    running: asyncio.Task[None] | None = None
    dropped: int = 0
    holding: bool = False
    """Whether the last fire was held back (it was logged; those after it are only counted)."""
    held: Any = None
    debounce: asyncio.TimerHandle | None = None


class Triggers:
    def __init__(
        self,
        shelf: Shelf,
        approvals: Approvals,
        calls: Calls,
        *,
        events: Callable[[], Events],
        app: Callable[[str], Descriptor],
        find: FindTool,
        now: Now | None = None,
    ) -> None:
        self.shelf = shelf
        self.approvals = approvals
        self.calls = calls
        self._events = events
        self._app = app
        self._find = find
        self.now: Now = now or (lambda: datetime.now(local_zone()))
        self._watching: dict[tuple[str, str, int], asyncio.Task[None]] = {}
        self._states: dict[tuple[str, str, int], _State] = {}
        self.runs: set[asyncio.Task[None]] = set()
        self._began = False
        """Whether the first look at the workflows is over (start triggers fire only on that one)."""

    async def run(self) -> None:
        """Watch every approved trigger until cancelled, following edits and approvals."""
        try:
            while True:
                self.refresh()
                await asyncio.sleep(REFRESH)  # start triggers found by the first look fire meanwhile
                self._began = True
        finally:
            await self.aclose()

    def refresh(self) -> None:
        """Start watching the triggers of workflows approved as they are now; stop the others."""
        wanted: dict[tuple[str, str, int], tuple[Saved, Trigger]] = {}
        for saved in list(self.shelf.workflows.values()):
            if not saved.triggers:
                continue
            approval = self.approvals.current(saved)
            if approval is None:
                continue
            if not set(tools_of(saved, self._find)) <= set(approval.tools):
                log.warning("workflow %s may now run tools its approval does not name; approve it again", saved.id)
                continue
            for trigger in saved.triggers:
                wanted[saved.id, fingerprint(saved), trigger.index] = (saved, trigger)
        for key in list(self._watching):
            if key not in wanted:
                self._watching.pop(key).cancel()
                self._states.pop(key, None)
                log.info("trigger %d of workflow %s stopped", key[2], key[0])
        for key, (saved, trigger) in wanted.items():
            if key not in self._watching:
                self._states[key] = _State()
                self._watching[key] = asyncio.ensure_future(self._watch(key, saved, trigger))
                log.info("workflow %s starts on %s", saved.id, trigger)

    async def aclose(self) -> None:
        watching = [*self._watching.values(), *self.runs]
        self._watching.clear()
        for task in watching:
            task.cancel()
        await asyncio.gather(*watching, return_exceptions=True)

    async def _watch(self, key: tuple[str, str, int], saved: Saved, trigger: Trigger) -> None:
        try:
            async for payload in self._source(key, trigger):
                self._fire(key, saved, trigger, payload)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("trigger %s of workflow %s stopped: %s", trigger, saved.id, exc)

    def _source(self, key: tuple[str, str, int], trigger: Trigger) -> AsyncIterator[Any]:
        if trigger.schedule is not None:
            return self._timer(trigger)
        if trigger.kind == "file":
            return self._files(Path(str(trigger.spec["file"])).expanduser())
        if trigger.kind == "start":
            return self._started()
        return self._app_events(key, trigger)

    async def _started(self) -> AsyncIterator[Any]:
        """Once, when the triggers start: a workflow approved later runs at the next start."""
        if not self._began:
            yield {"at": self.now().isoformat()}

    async def _timer(self, trigger: Trigger) -> AsyncIterator[Any]:
        assert trigger.schedule is not None
        when = trigger.schedule.next_after(self.now())
        while True:
            await asyncio.sleep(max((when - self.now()).total_seconds(), 0.0))
            if self.now() < when:  # woke early (a clock change): wait for the rest
                continue
            yield {"at": when.isoformat()}
            when = trigger.schedule.next_after(max(when, self.now() - timedelta(seconds=1)))

    async def _files(self, path: Path) -> AsyncIterator[Any]:
        async for changes in watchfiles.awatch(path, debounce=200, step=50, recursive=True):
            listed = sorted(changes, key=lambda c: c[1])[:MOST_CHANGES]
            yield {"changes": [{"change": change.name, "path": where} for change, where in listed]}

    async def _app_events(self, key: tuple[str, str, int], trigger: Trigger) -> AsyncIterator[Any]:
        from aai_gateway.events.wait import app_event  # noqa: PLC0415 (events load with the first subscription)

        caller = Caller(name=CALLER, transport=CALLER)
        app, event = await app_event(
            self.calls, self._app(str(trigger.spec["app"])), str(trigger.spec["event"]), caller
        )
        subscription = await self._events().subscribe(app, event, trigger.spec.get("filter"), caller)
        async with subscription:
            counted = 0
            async for occurrence in subscription:
                state = self._states.get(key)
                if state is not None and subscription.dropped > counted:  # a storm outran the queue: held back too
                    state.dropped += subscription.dropped - counted
                counted = subscription.dropped
                yield occurrence.payload

    def _fire(self, key: tuple[str, str, int], saved: Saved, trigger: Trigger, payload: Any) -> None:
        state = self._states.get(key)
        if state is None:
            return
        if trigger.debounce > 0:
            state.held = payload
            if state.debounce is not None:
                state.debounce.cancel()
            loop = asyncio.get_running_loop()
            state.debounce = loop.call_later(trigger.debounce, self._settled, key, saved, trigger)
            return
        self._launch(key, state, saved, trigger, payload)

    def _settled(self, key: tuple[str, str, int], saved: Saved, trigger: Trigger) -> None:
        state = self._states.get(key)
        if state is not None:
            state.debounce = None
            self._launch(key, state, saved, trigger, state.held)

    def _launch(self, key: tuple[str, str, int], state: _State, saved: Saved, trigger: Trigger, payload: Any) -> None:
        now = asyncio.get_running_loop().time()
        while state.recent and now - state.recent[0] >= 60:
            state.recent.popleft()
        busy = state.running is not None and not state.running.done() and not trigger.overlap
        if len(state.recent) >= trigger.per_minute or busy:
            if not state.holding:  # once per stretch: a storm of fires is no storm of log lines
                why = "it still runs" if busy else f"it ran {trigger.per_minute} times in the last minute"
                log.info(
                    "workflow %s: %s fired and was held back, as %s; its next run's record counts what is held back",
                    saved.id,
                    trigger,
                    why,
                )
            state.holding = True
            state.dropped += 1
            return
        state.holding = False
        state.recent.append(now)
        dropped, state.dropped = state.dropped, 0
        event = {"trigger": str(trigger), "payload": payload, "at": self.now().isoformat(), "heldBack": dropped}
        task = asyncio.ensure_future(self._run(saved, event))
        state.running = task
        self.runs.add(task)
        task.add_done_callback(self.runs.discard)

    async def _run(self, saved: Saved, event: Mapping[str, Any]) -> None:
        approval = self.approvals.current(saved)
        if approval is None:
            return
        allowed = set(approval.tools)

        async def approved(question: Question) -> Answer | None:
            return Answer.ONCE if question.tool == RUN else None  # the plan's one question: its tools are `allowed`

        if not set(tools_of(saved, self._find)) <= allowed:
            return
        caller = Caller(name=CALLER, transport=CALLER, ask=approved)
        with contextlib.suppress(AaiError):  # recorded in the history as the run's failure
            report = await run_saved(saved, {}, self.calls, caller, event=dict(event))
            if report.status != "ok":
                log.warning("workflow %s, started by %s, ended %s", saved.id, event["trigger"], report.status)

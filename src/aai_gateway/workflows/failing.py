"""Triggers that keep failing, read from the history: for each workflow and trigger whose latest triggered
run failed, how many of its runs failed lately and the last error. The UI's overview and `workflow list`
show them; a trigger whose latest run went through is not listed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from aai_gateway.history.reader import HistoryReader
from aai_gateway.history.record import RUN_APP, Record
from aai_gateway.workflows.triggers import CALLER

LATELY = timedelta(hours=24)
"""How far back failures are counted."""
READ = 2_000
"""Triggered runs read at most (newest first): a day of one trigger at its default of 6 a minute is 8,640."""
ERROR_SHOWN = 300
"""Characters of the last error shown."""


@dataclass(frozen=True, slots=True)
class Failing:
    workflow: str
    trigger: str
    failures: int
    """Failed runs since `since` (of the runs read)."""
    runs: int
    """Runs since `since` (of the runs read)."""
    last: Record
    """The latest run, which failed."""
    since: datetime

    @property
    def error(self) -> str:
        found = self.last
        detail = " ".join((found.error_detail or "").split())
        if len(detail) > ERROR_SHOWN:
            detail = detail[:ERROR_SHOWN] + "…"
        return f"{found.error_type or 'error'}: {detail}" if detail else found.error_type or "error"

    def to_json(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow,
            "trigger": self.trigger,
            "failures": self.failures,
            "runs": self.runs,
            "since": self.since.isoformat(timespec="seconds"),
            "lastRun": self.last.call_id,
            "lastTime": self.last.time.isoformat(timespec="seconds"),
            "lastError": self.error,
        }


def failing(history: HistoryReader, now: datetime) -> list[Failing]:
    """The triggers whose latest run (within `LATELY`) failed, the one that failed last first."""
    since = now - LATELY
    return summed(history.query(app=RUN_APP, caller=CALLER, since=since, limit=READ), since)


def summed(records: Iterable[Record], since: datetime) -> list[Failing]:
    """`records` (newest first) grouped by workflow and trigger; the groups whose newest run failed."""
    groups: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        if record.parent is None:
            groups.setdefault((record.tool, trigger_of(record)), []).append(record)
    found = [
        Failing(workflow, trigger, sum(r.status == "error" for r in runs), len(runs), runs[0], since)
        for (workflow, trigger), runs in groups.items()
        if runs[0].status == "error"
    ]
    return sorted(found, key=lambda f: f.last.time, reverse=True)


def trigger_of(record: Record) -> str:
    event = record.args.get("event") if isinstance(record.args, dict) else None
    trigger = event.get("trigger") if isinstance(event, dict) else None
    return trigger if isinstance(trigger, str) else "an unknown trigger"

"""One call as the history keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Status = Literal["ok", "error"]
STATUSES: tuple[Status, ...] = ("ok", "error")
RUN_APP = "aai.workflows"
"""The app of a run's record (a plan, or a saved workflow by its id as the tool); its steps point at it."""


@dataclass(slots=True)  # not frozen: a frozen dataclass takes 1.3 µs more to make, once for every call
class Record:
    """A finished call: arguments, result excerpt and error detail are already redacted."""

    call_id: str
    time: datetime
    """When the call started, in UTC."""
    caller: str
    transport: str
    app: str
    tool: str
    args: Any
    status: Status
    duration_ms: float
    error_code: int | None = None
    error_type: str | None = None
    error_detail: str | None = None
    result: str | None = None
    """The result as JSON text, cut to an excerpt; None for a failed call."""
    result_truncated: bool = False
    consent: str | None = None
    """The consent question this call asked the user: the answer given (an `Answer` value: once, tool, app,
    deny, never), "decided" (settled in the UI or CLI while the call waited), "unanswered", or None when
    no question was asked."""
    parent: str | None = None
    """The call id of the run (app RUN_APP) this call is a step or an undo of; None for a call of its own."""
    step: str | None = None
    """The step's label within its run: `read`, `notify[2]` (the third item of a forEach), `lower (undo)`."""
    encoded_head: str | None = field(default=None, compare=False, repr=False)
    """The start of its journal line, up to its arguments, when worked out already (`journal.encoded_head`)."""

    def to_json(self) -> dict[str, Any]:
        error = None
        if self.status == "error":
            error = {"code": self.error_code, "type": self.error_type, "detail": self.error_detail}
        return {
            "id": self.call_id,
            "time": iso(self.time),
            "caller": self.caller,
            "transport": self.transport,
            "app": self.app,
            "tool": self.tool,
            "args": self.args,
            "status": self.status,
            "error": error,
            "durationMs": round(self.duration_ms, 3),
            "result": self.result,
            "resultTruncated": self.result_truncated,
            "consent": self.consent,
            "parent": self.parent,
            "step": self.step,
        }


def iso(moment: datetime) -> str:
    """UTC with milliseconds, one fixed width, so that stored times sort and compare as text."""
    if moment.tzinfo is not UTC:  # `now()`'s, every call's, is already
        moment = (moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment).astimezone(UTC)
    return moment.isoformat(timespec="milliseconds")


def now() -> datetime:
    return datetime.now(UTC)

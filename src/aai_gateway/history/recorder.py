"""From a call's outcome to a redacted `Record` in the store, committed before the result goes back.

The steps of a run (a plan or a saved workflow) are the exception: their answers go to the run, not to a
client. A step's record is queued as the step ends and the run goes on at once; the record is committed
just after that turn of the event loop, while the next step's app works on its call. The run waits for
every one of them before its own record, and so before its answer (`running`, `settle`). What the run's
own arguments hide (a saved workflow's inputs its schema marks sensitive) is cut out of its steps'
records too, since the steps' arguments are built from them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from aai_gateway import json_text
from aai_gateway.config import Settings
from aai_gateway.descriptor import Tool
from aai_gateway.errors import AaiError
from aai_gateway.history.journal import encoded_head
from aai_gateway.history.record import RUN_APP, Record, now
from aai_gateway.history.redact import Redactor, shorten
from aai_gateway.history.store import HistoryStore

log = logging.getLogger(__name__)

EXCERPT_CHARS = 2048
MAX_DETAIL = 4000
MAX_NAME = 200
MAX_PARSED = 1_000_000
"""A string result up to this size that holds a JSON object or array is redacted as that JSON."""

Find = Callable[[str, str], tuple[Any, Any, Tool]]


class Unknown:
    """The tool of a call not told: the recorder looks it up by the call's app and tool."""


UNKNOWN: Final = Unknown()


@dataclass(frozen=True, slots=True)
class _Run:
    steps: list[asyncio.Future[Future[None] | None]]
    """The records of its steps not known to be committed yet."""
    redactor: Redactor
    """The recorder's redactor, also cutting out what the run's arguments hide."""


@dataclass(frozen=True, slots=True)
class _Early:
    """A call's arguments as its record holds them, and the start of its journal line, worked out before the
    call ends (`Recorder.prepare`)."""

    tool: Tool | None
    args: Any
    redactor: Redactor
    head: str


@dataclass(slots=True)
class Pending:
    call_id: str
    caller: str
    transport: str
    app: str
    tool: str
    args: Any
    time: datetime = field(default_factory=now)
    parent: str | None = None
    step: str | None = None
    early: _Early | None = None


class Recorder:
    """Builds and writes the history record of each call. A history that cannot be written is logged
    and the call goes on, its record waiting in the store's memory (unless `requireHistory` refuses
    calls meanwhile): losing the record is better than failing the user's operation."""

    def __init__(self, store: HistoryStore, redactor: Redactor, find: Find) -> None:
        self.store = store
        self.redactor = redactor
        self._find = find
        self._failing = False
        self._runs: dict[str, _Run] = {}
        """The runs under way, by call id."""

    def begin(
        self,
        call_id: str,
        *,
        caller: str,
        transport: str,
        app: str,
        tool: str,
        args: Any,
        parent: str | None = None,
        step: str | None = None,
    ) -> Pending:
        """A call starting now; `parent` the call id of the run it is a step or an undo of (see
        history/runs.py), `step` its label there (`read`, `notify[2]`, `lower (undo)`)."""
        if parent == call_id:  # a call that were its own run would be listed nowhere
            parent = None
        step = None if step is None else step[:MAX_NAME]
        return Pending(call_id, caller[:MAX_NAME], transport, app, tool, args, parent=parent, step=step)

    def prepare(self, pending: Pending, tool: Tool | None) -> None:
        """Redact the arguments of the call `pending` of `tool` now, and encode the start of its record's
        journal line: called while the app works on the call, this is not left to do between the call's end
        and its answer."""
        try:
            args, redactor = self._args(pending, tool)
            pending.early = _Early(tool, args, redactor, encoded_head(self._record(pending, args, "ok", 0.0)))
        except Exception:  # worked out again when the call ends, where a failure is said
            pending.early = None

    async def ok(
        self,
        pending: Pending,
        result: Any,
        duration_ms: float,
        *,
        tool: Tool | Unknown | None = UNKNOWN,
        alone: bool = False,
        consent: str | None = None,
    ) -> None:
        """Record a call that succeeded; `tool` the tool it called (None: none, such as a run's), whose schema
        marks the sensitive fields; `alone` when no other call is running (see `HistoryStore.write`);
        `consent` how the consent question it asked ended (see `Record.consent`)."""
        try:
            tool = self._tool(pending) if isinstance(tool, Unknown) else tool
            args, redactor, head = self._arguments(pending, tool)
            text, truncated = excerpt(self._result(redactor, result, tool.returns if tool else None))
            record = self._record(
                pending,
                args,
                "ok",
                duration_ms,
                result=text,
                result_truncated=truncated,
                consent=consent,
                encoded_head=head,
            )
        except Exception:
            log.exception("cannot record call %s in the history", pending.call_id)
            return
        await self._write(record, alone)

    async def failed(
        self,
        pending: Pending,
        error: AaiError,
        duration_ms: float,
        *,
        tool: Tool | Unknown | None = UNKNOWN,
        alone: bool = False,
        consent: str | None = None,
    ) -> None:
        try:
            found = self._tool(pending) if isinstance(tool, Unknown) else tool
            record = self._error(
                pending, duration_ms, error.code, error.type, error.detail, tool=found, consent=consent
            )
        except Exception:
            log.exception("cannot record call %s in the history", pending.call_id)
            return
        await self._write(record, alone)

    def cancelled(self, pending: Pending, duration_ms: float, *, tool: Tool | Unknown | None = UNKNOWN) -> None:
        """A call given up by its caller: queued without waiting, since the waiting task is being cancelled."""
        try:
            detail = "the caller cancelled the call before it ended"
            found = self._tool(pending) if isinstance(tool, Unknown) else tool
            record = self._error(pending, duration_ms, None, "CANCELLED", detail, tool=found)
        except Exception:
            log.exception("cannot record call %s in the history", pending.call_id)
            return
        self.store.submit(record).add_done_callback(lambda done: self._check(done.exception()))

    def arguments(self, app: str, tool: str, args: Any) -> Any:
        """A call's arguments redacted as its record holds them, for other accounts of the call."""
        pending = self.begin("", caller="", transport="", app=app, tool=tool, args=args)
        return self._args(pending, self._tool(pending))[0]

    def running(self, run: Pending, tool: Tool | None) -> None:
        """`run` starts, its arguments described by `tool`: the records of its steps are committed while it goes
        on, and what its arguments hide is cut out of them (see the module's account)."""
        _, redactor = self._args(run, tool)
        self._runs[run.call_id] = _Run([], redactor)

    async def settle(self, run_id: str) -> None:
        """Wait until the records of the run's steps are committed (or could not be: then said once, as for
        any record); before the run's own record is written."""
        run = self._runs.pop(run_id, None)
        for turn in run.steps if run is not None else []:
            try:
                handed_over = await turn
                if handed_over is not None:
                    await asyncio.wrap_future(handed_over)
            except Exception as exc:
                self._check(exc)
            else:
                self._check(None)

    def forsake(self, run_id: str) -> None:
        """A run cancelled: its steps' records are committed all the same, with no one waiting for them."""
        self._runs.pop(run_id, None)

    def _error(
        self,
        pending: Pending,
        duration_ms: float,
        code: int | None,
        kind: str,
        detail: str,
        *,
        tool: Tool | None,
        consent: str | None = None,
    ) -> Record:
        args, redactor, head = self._arguments(pending, tool)
        text = shorten(redactor.text(detail), MAX_DETAIL)
        return self._record(
            pending,
            args,
            "error",
            duration_ms,
            error_code=code,
            error_type=kind,
            error_detail=text,
            consent=consent,
            encoded_head=head,
        )

    def _arguments(self, pending: Pending, tool: Tool | None) -> tuple[Any, Redactor, str | None]:
        """`_args`, and the start of the record's journal line when `prepare` worked them out for the same
        tool already."""
        early = pending.early
        if early is not None and early.tool is tool:
            return early.args, early.redactor, early.head
        args, redactor = self._args(pending, tool)
        return args, redactor, None

    def _args(self, pending: Pending, tool: Tool | None) -> tuple[Any, Redactor]:
        """The redacted arguments, and a redactor that also cuts the values it masked out of other text
        (an app echoing a password in its result or error)."""
        run = self._runs.get(pending.parent) if pending.parent is not None else None
        redactor = run.redactor if run is not None else self.redactor
        hidden: list[str] = []
        args = redactor.value(pending.args, tool.parameters if tool else None, hidden=hidden)
        return args, redactor.also(hidden) if hidden else redactor

    def _record(self, pending: Pending, args: Any, status: Any, duration_ms: float, **more: Any) -> Record:
        return Record(
            call_id=pending.call_id,
            time=pending.time,
            caller=pending.caller,
            transport=pending.transport,
            app=pending.app,
            tool=pending.tool,
            args=args,
            status=status,
            duration_ms=duration_ms,
            parent=pending.parent,
            step=pending.step,
            **more,
        )

    @staticmethod
    def _result(redactor: Redactor, result: Any, schema: Mapping[str, Any] | None) -> Any:
        if isinstance(result, str) and len(result) <= MAX_PARSED and result.lstrip()[:1] in ("{", "["):
            try:
                parsed = json.loads(result)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict | list):
                redacted = redactor.value(parsed, schema, max_string=EXCERPT_CHARS)
                return _EXCERPT_ENCODER(redacted) if redacted != parsed else redactor.text(result)
        return redactor.value(result, schema, max_string=EXCERPT_CHARS)

    def _tool(self, pending: Pending) -> Tool | None:
        """The tool called, for the schema that marks sensitive fields; None when the call never found it."""
        if pending.app == RUN_APP:  # a plan or workflow, no app's tool
            return None
        try:
            return self._find(pending.app, pending.tool)[2]
        except Exception:
            return None

    async def _write(self, record: Record, alone: bool) -> None:
        run = self._runs.get(record.parent) if record.parent is not None else None
        if run is not None:
            run.steps.append(self.store.queue(record))
            return
        try:
            await self.store.write(record, alone=alone)
        except Exception as exc:
            self._check(exc)
        else:
            self._check(None)

    def _check(self, error: BaseException | None) -> None:
        """Warn once when the history stops being written, and once when it works again."""
        if error is not None and not self._failing:
            log.warning("the call history is not being written: %s", error)
        elif error is None and self._failing:
            log.warning("the call history is being written again")
        self._failing = error is not None


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> tuple[str, bool]:
    """The JSON text of `value`, cut after `limit` characters, and whether it was cut.

    Encoded whole by the C encoder: what is recorded has been walked whole by the redactor already, which
    costs more than encoding it, and encoding part of it would take the pure-Python encoder (timeit:
    3.8 µs against 1.2 for a small result, 61 against 12 for ten steps' arguments and results)."""
    text = _EXCERPT_ENCODER(value)
    return (text[:limit], True) if len(text) > limit else (text, False)


_EXCERPT_ENCODER = json_text.encoder(default=str)


def known_secrets(settings: Settings) -> list[str]:
    """Secret values of the config (client secrets, API keys), to cut out of anything recorded."""
    found = []
    for app in settings.apps.values():
        for secret in (app.client_secret, app.api_key):
            if secret is not None:
                found.append(secret.reveal())
    return found

"""The calls table's columns, a record as a row and back, and the WHERE clause of the history's filters."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, TypedDict, Unpack

from aai_gateway import json_text
from aai_gateway.history.record import STATUSES, Record, iso

COLUMNS = (
    "id, time, caller, transport, app, tool, args, status, error_code, error_type, error_detail, duration_ms, "
    "result, result_truncated, consent, parent, step"
)
INSERT = f"INSERT OR IGNORE INTO calls ({COLUMNS}) VALUES ({', '.join('?' * len(COLUMNS.split(',')))})"  # noqa: S608


_ARGS_ENCODER = json_text.encoder(default=str)


def encoded_args(args: Any) -> str:
    """A record's arguments as the calls table keeps them: JSON text."""
    return _ARGS_ENCODER(args)


def stored_row(record: Record) -> tuple[Any, ...]:
    """The record's values as the calls table keeps them, in the order of COLUMNS."""
    return stored_head(record) + stored_tail(record)


def stored_head(record: Record) -> tuple[Any, ...]:
    """The row's values from id to args: known once a call has found its tool (see `Recorder.prepare`)."""
    return (
        record.call_id,
        iso(record.time),
        record.caller,
        record.transport,
        record.app,
        record.tool,
        encoded_args(record.args),
    )


def stored_tail(record: Record) -> tuple[Any, ...]:
    """The row's values after its args: the call's outcome."""
    return (
        record.status,
        record.error_code,
        record.error_type,
        record.error_detail,
        record.duration_ms,
        record.result,
        int(record.result_truncated),
        record.consent,
        record.parent,
        record.step,
    )


def record_of(row: tuple[Any, ...]) -> Record:
    """The record of a row read as COLUMNS."""
    (
        call_id,
        at,
        caller,
        transport,
        app,
        tool,
        args,
        status,
        code,
        kind,
        detail,
        duration,
        result,
        truncated,
        consent,
        parent,
        step,
    ) = row
    return Record(
        call_id=call_id,
        time=datetime.fromisoformat(at),
        caller=caller,
        transport=transport,
        app=app,
        tool=tool,
        args=json.loads(args),
        status=status,
        duration_ms=duration,
        error_code=code,
        error_type=kind,
        error_detail=detail,
        result=result,
        result_truncated=bool(truncated),
        consent=consent,
        parent=parent,
        step=step,
    )


class Filters(TypedDict, total=False):
    """What every history query may be narrowed to: calls of this app, tool, status (ok, error) and caller,
    from `since` to `until` (both inclusive); a filter left out (or None) narrows nothing."""

    app: str | None
    tool: str | None
    status: str | None
    caller: str | None
    since: datetime | None
    until: datetime | None


def conditions(**filters: Unpack[Filters]) -> tuple[str, list[Any]]:
    """The filters as the conditions of a WHERE clause joined by AND ("" for none), and their parameters."""
    unknown = filters.keys() - Filters.__annotations__.keys()
    if unknown:
        raise TypeError(f"no history filter is called {', '.join(sorted(unknown))}")
    status, since, until = filters.get("status"), filters.get("since"), filters.get("until")
    if status is not None and status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    clauses: list[str] = []
    params: list[Any] = []
    for column in ("app", "tool", "status", "caller"):
        value = filters.get(column)
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if since is not None:
        clauses.append("time >= ?")
        params.append(iso(since))
    if until is not None:
        clauses.append("time <= ?")
        params.append(iso(until))
    return " AND ".join(clauses), params

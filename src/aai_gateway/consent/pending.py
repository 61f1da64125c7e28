"""Calls refused with CONSENT_REQUIRED, kept so that a person can decide them later (CLI or web UI).

Deciding a pending request stores a decision for its caller, app and tool; the agent's retried call
then passes (or is refused). A request is kept for a day, at most `MAX_PENDING` of them, and the same
caller, app and tool asking again updates its request rather than adding one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from aai_gateway.consent.policy import Answer, Grant

MAX_PENDING = 100
LIFETIME = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class PendingRequest:
    id: str
    caller: str
    app: str
    tool: str
    arguments: tuple[tuple[str, str], ...]
    """a readable summary of the arguments, secrets redacted (see `summary.summarize`)"""
    created: str
    """UTC, ISO 8601"""
    transport: str = ""
    destructive: bool = False
    """the tool is marked destructive, so a whole-app allow does not settle the request"""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "caller": self.caller,
            "app": self.app,
            "tool": self.tool,
            "arguments": [list(pair) for pair in self.arguments],
            "created": self.created,
            "transport": self.transport,
            "destructive": self.destructive,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PendingRequest:
        return cls(
            id=str(data["id"]),
            caller=str(data["caller"]),
            app=str(data["app"]),
            tool=str(data["tool"]),
            arguments=tuple((str(k), str(v)) for k, v in data.get("arguments", [])),
            created=str(data["created"]),
            transport=str(data.get("transport", "")),
            destructive=data.get("destructive") is True,
        )


def remember(
    pending: tuple[PendingRequest, ...], request: PendingRequest, now: datetime
) -> tuple[tuple[PendingRequest, ...], PendingRequest]:
    """The list with `request` added (or updating the same caller, app and tool's), stale ones dropped."""
    kept: list[PendingRequest] = []
    for old in fresh(pending, now):
        if (old.caller, old.app, old.tool) == (request.caller, request.app, request.tool):
            request = replace(request, id=old.id)
        else:
            kept.append(old)
    kept.append(request)
    return tuple(kept[-MAX_PENDING:]), request


def fresh(pending: tuple[PendingRequest, ...], now: datetime) -> tuple[PendingRequest, ...]:
    oldest = now - LIFETIME
    return tuple(p for p in pending if _parse(p.created) >= oldest)


def covered(pending: tuple[PendingRequest, ...], grant: Grant) -> tuple[PendingRequest, ...]:
    """The requests a new lasting decision does not settle."""
    if grant.once:
        return pending
    return tuple(p for p in pending if not grant.covers(p.caller, p.app, p.tool, destructive=p.destructive))


def grant_for(request: PendingRequest, answer: Answer, grant_id: str, created: str, source: str) -> Grant:
    """The decision `request` answered means: for its caller, and its tool or (APP) its whole app.

    A whole-app allow does not cover a destructive tool: `store.decide` adds a one-time allow for the call
    asked about, since the user did answer that question."""
    return Grant(
        id=grant_id,
        app=request.app,
        decision="allow" if answer.allows else "deny",
        caller=request.caller,
        tool=None if answer is Answer.APP else request.tool,
        once=answer in (Answer.ONCE, Answer.DENY),
        created=created,
        source=source,
    )


def _parse(text: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)

"""Consent decisions and pending requests in `<AAI home>/consent.json`, shared by every gateway process.

The file is small, readable only by the user (0600), and replaced atomically under a lock, so that
the CLI, the web UI and running gateways can all change it. A reader checks the file's identity
(inode, size, mtime) on each call, a single `stat`, and reads it again only when it changed: a
revocation takes effect on the next call of a running gateway.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from aai_gateway.consent import pending as pending_requests
from aai_gateway.consent.pending import PendingRequest
from aai_gateway.consent.policy import Answer, Grant

if sys.platform == "win32":
    import msvcrt
else:
    import fcntl

log = logging.getLogger(__name__)

VERSION = 1
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ServerApproval:
    """The user's yes to one command line of an MCP server's app (see `consent.launches`)."""

    id: str
    app: str
    fingerprint: str
    command: str
    """the command line as the user was shown it (secrets masked), for `consent list`"""
    created: str = ""
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "app": self.app,
            "fingerprint": self.fingerprint,
            "command": self.command,
            "created": self.created,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServerApproval:
        return cls(
            id=str(data["id"]),
            app=str(data["app"]),
            fingerprint=str(data["fingerprint"]),
            command=str(data.get("command", "")),
            created=str(data.get("created", "")),
            source=str(data.get("source", "")),
        )


@dataclass(frozen=True, slots=True)
class State:
    decisions: tuple[Grant, ...] = ()
    pending: tuple[PendingRequest, ...] = ()
    servers: tuple[ServerApproval, ...] = ()


class ConsentStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._where = str(path)
        self._lock_path = path.with_name(path.name + ".lock")
        self._key: tuple[int, int, int] | None = None
        self._state = State()

    def state(self) -> State:
        """The current decisions and pending requests; re-read only when the file changed."""
        key = self._identity()
        if key != self._key:
            self._state, _ = self._read()
            self._key = key
        return self._state

    def decisions(self) -> tuple[Grant, ...]:
        return self.state().decisions

    def pending(self) -> tuple[PendingRequest, ...]:
        return pending_requests.fresh(self.state().pending, _now())

    def servers(self) -> tuple[ServerApproval, ...]:
        return self.state().servers

    def server_approved(self, app: str, fingerprint: str) -> bool:
        return any(a.app == app and a.fingerprint == fingerprint for a in self.servers())

    def approve_server(self, app: str, fingerprint: str, command: str, *, source: str = "cli") -> ServerApproval:
        """Approve this command line of `app`'s server; it replaces the app's earlier approval."""
        approval = ServerApproval(_new_id(), app, fingerprint, command, _stamp(), source)

        def change(state: State) -> tuple[State, ServerApproval]:
            kept = tuple(a for a in state.servers if a.app != app)
            return replace(state, servers=(*kept, approval)), approval

        return self._mutate(change)

    def revoke_server(self, app: str) -> list[ServerApproval]:
        return self._remove_servers(lambda a: a.app == app)

    def pending_request(self, request_id: str) -> PendingRequest | None:
        return next((p for p in self.pending() if p.id == request_id), None)

    def allow(self, app: str, caller: str | None = None, tool: str | None = None, *, source: str = "cli") -> Grant:
        return self.store(app, "allow", caller, tool, source=source)

    def deny(self, app: str, caller: str | None = None, tool: str | None = None, *, source: str = "cli") -> Grant:
        return self.store(app, "deny", caller, tool, source=source)

    def store(
        self, app: str, decision: str, caller: str | None = None, tool: str | None = None, *, source: str = "cli"
    ) -> Grant:
        """Keep a lasting decision, replacing one with the same caller, app and tool."""
        if decision not in ("allow", "deny"):
            raise ValueError(f"a stored decision is allow or deny, not {decision!r}")
        grant = Grant(
            id=_new_id(),
            app=app,
            decision="allow" if decision == "allow" else "deny",
            caller=caller,
            tool=tool,
            created=_stamp(),
            source=source,
        )
        return self._mutate(lambda state: (_with_grant(state, grant), grant))

    def revoke(self, app: str, caller: str | None = None, tool: str | None = None) -> list[Grant]:
        """Remove the decision with exactly these keys (no caller: the any-caller one)."""
        return self._remove(lambda g: g.same_keys(caller, app, tool))

    def revoke_id(self, grant_id: str) -> list[Grant]:
        return self._remove(lambda g: g.id == grant_id)

    def revoke_server_id(self, approval_id: str) -> list[ServerApproval]:
        return self._remove_servers(lambda a: a.id == approval_id)

    def revoke_all(self, app: str) -> list[Grant]:
        """Remove every decision about `app`, whoever and whichever tool it names."""
        return self._remove(lambda g: g.app == app)

    def use(self, grant_id: str) -> bool:
        """Use up a one-time decision; False when another call used it first."""

        def change(state: State) -> tuple[State, bool]:
            kept = tuple(g for g in state.decisions if g.id != grant_id)
            return replace(state, decisions=kept), len(kept) != len(state.decisions)

        return self._mutate(change)

    def ask_later(
        self,
        caller: str,
        app: str,
        tool: str,
        arguments: tuple[tuple[str, str], ...],
        transport: str = "",
        *,
        destructive: bool = False,
    ) -> PendingRequest:
        """Remember a call that needs a decision; the same caller, app and tool keep one request."""
        request = PendingRequest(_new_id(), caller, app, tool, arguments, _stamp(), transport, destructive)

        def change(state: State) -> tuple[State, PendingRequest]:
            kept, stored = pending_requests.remember(state.pending, request, _now())
            return replace(state, pending=kept), stored

        return self._mutate(change)

    def decide(self, request_id: str, answer: Answer, *, source: str = "ui") -> Grant:
        """Settle a pending request: store the decision its answer means (a one-time one for ONCE and DENY)."""

        def change(state: State) -> tuple[State, Grant]:
            request = next((p for p in state.pending if p.id == request_id), None)
            if request is None:
                raise LookupError(f"no pending consent request {request_id}; it was decided or expired")
            grant = pending_requests.grant_for(request, answer, _new_id(), _stamp(), source)
            after = _with_grant(state, grant)
            if request.destructive and answer is Answer.APP:
                once = pending_requests.grant_for(request, Answer.ONCE, _new_id(), _stamp(), source)
                after = _with_grant(after, once)
            return replace(after, pending=tuple(p for p in after.pending if p.id != request_id)), grant

        return self._mutate(change)

    def _remove(self, chosen: Callable[[Grant], bool]) -> list[Grant]:
        def change(state: State) -> tuple[State, list[Grant]]:
            removed = [g for g in state.decisions if chosen(g)]
            return replace(state, decisions=tuple(g for g in state.decisions if not chosen(g))), removed

        return self._mutate(change)

    def _remove_servers(self, chosen: Callable[[ServerApproval], bool]) -> list[ServerApproval]:
        def change(state: State) -> tuple[State, list[ServerApproval]]:
            removed = [a for a in state.servers if chosen(a)]
            return replace(state, servers=tuple(a for a in state.servers if not chosen(a))), removed

        return self._mutate(change)

    def _mutate(self, change: Callable[[State], tuple[State, T]]) -> T:
        with self._locked():
            current, damaged = self._read()
            after, result = change(current)
            if after != current or damaged:
                if damaged:
                    self._set_aside()
                self._write(after)
            self._state, self._key = after, self._identity()
        return result

    def _identity(self) -> tuple[int, int, int] | None:
        if self._key is None and not os.access(self._where, os.F_OK):  # still none: told without an exception
            return None
        try:
            st = os.stat(self._where)  # noqa: PTH116 - on every call: a str path is the cheapest stat
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _read(self) -> tuple[State, bool]:
        """The file's state, and whether it was damaged (then read as empty, loudly)."""
        try:
            text = self.path.read_text("utf-8")
        except FileNotFoundError:
            return State(), False
        except (OSError, UnicodeDecodeError) as exc:
            log.error(
                "cannot read the consent decisions in %s (%s): asking again as if none were stored", self.path, exc
            )
            return State(), False
        try:
            data = json.loads(text)
            return _state_from(data), False
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.error("the consent file %s is damaged (%s): asking again as if no decision were stored", self.path, exc)
            return State(), True

    def _set_aside(self) -> None:
        aside = self.path.with_name(f"{self.path.name}.damaged-{datetime.now(UTC):%Y%m%dT%H%M%S}")
        try:
            self.path.replace(aside)
            log.error("kept the damaged consent file as %s", aside)
        except OSError as exc:
            log.error("cannot keep the damaged consent file aside: %s", exc)

    def _write(self, state: State) -> None:
        data = {
            "version": VERSION,
            "decisions": [g.to_json() for g in state.decisions],
            "pending": [p.to_json() for p in state.pending],
            "servers": [a.to_json() for a in state.servers],
        }
        text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            temporary.replace(self.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if sys.platform == "win32":
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
            else:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _with_grant(state: State, grant: Grant) -> State:
    """A lasting decision replaces the one with the same keys and settles the pending requests it covers."""
    decisions = state.decisions
    if not grant.once:
        decisions = tuple(g for g in decisions if g.once or not g.same_keys(grant.caller, grant.app, grant.tool))
    return replace(state, decisions=(*decisions, grant), pending=pending_requests.covered(state.pending, grant))


def grant_from(data: dict[str, Any]) -> Grant:
    decision = data["decision"]
    if decision not in ("allow", "deny"):
        raise ValueError(f"unknown decision {decision!r}")
    caller, tool = data.get("caller"), data.get("tool")
    return Grant(
        id=str(data["id"]),
        app=str(data["app"]),
        decision=decision,
        caller=None if caller is None else str(caller),
        tool=None if tool is None else str(tool),
        once=bool(data.get("once", False)),
        created=str(data.get("created", "")),
        source=str(data.get("source", "")),
    )


def _state_from(data: Any) -> State:
    if not isinstance(data, dict):
        raise TypeError("not a JSON object")
    return State(
        decisions=tuple(grant_from(g) for g in data.get("decisions", [])),
        pending=tuple(PendingRequest.from_json(p) for p in data.get("pending", [])),
        servers=tuple(ServerApproval.from_json(a) for a in data.get("servers", [])),
    )


def _new_id() -> str:
    return secrets.token_hex(4)


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp() -> str:
    return _now().isoformat(timespec="seconds")

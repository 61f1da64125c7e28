"""Who may run what: stored decisions, then config rules, then the defaults. Pure functions over values.

A stored decision (a `Grant`) names a caller (None: any caller), an app and a tool (None: the whole
app). Among the stored decisions that match a call, a deny wins over an allow. When none matches, the
first matching `consent.rules` entry decides; else `consent.readOnly` for a tool marked read-only
(when it says "allow"), else `consent.default`.

A tool marked destructive is never allowed by a whole-app allow: only a decision naming the tool, a
rule or the default can allow it, so the user is asked about it on its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from aai_gateway.config import ConsentRule

Mode = Literal["allow", "ask", "deny"]
ANY = "*"


class Answer(StrEnum):
    """What the user chose when asked."""

    ONCE = "once"
    """allow this call only"""
    TOOL = "tool"
    """allow this tool of the app from now on"""
    APP = "app"
    """allow every tool of the app from now on"""
    DENY = "deny"
    """refuse this call only"""
    NEVER = "never"
    """refuse this tool of the app from now on"""

    @property
    def allows(self) -> bool:
        return self in (Answer.ONCE, Answer.TOOL, Answer.APP)


ANSWER_TITLES: dict[Answer, str] = {
    Answer.ONCE: "Allow once",
    Answer.TOOL: "Always allow this tool",
    Answer.APP: "Always allow every tool of this app",
    Answer.DENY: "Deny this time",
    Answer.NEVER: "Always deny this tool",
}


@dataclass(frozen=True, slots=True)
class Grant:
    """A stored decision. `once` grants are used up by the first call they decide."""

    id: str
    app: str
    decision: Literal["allow", "deny"]
    caller: str | None = None
    tool: str | None = None
    once: bool = False
    created: str = ""
    source: str = ""

    def matches(self, caller: str, app: str, tool: str) -> bool:
        return (
            self.app == app
            and (self.caller is None or self.caller == caller)
            and (self.tool is None or self.tool == tool)
        )

    def covers(self, caller: str, app: str, tool: str, *, destructive: bool = False) -> bool:
        """Whether it decides this call: it matches, and it is not a whole-app allow of a destructive tool."""
        if destructive and self.decision == "allow" and self.tool is None:
            return False
        return self.matches(caller, app, tool)

    def same_keys(self, caller: str | None, app: str, tool: str | None) -> bool:
        return (self.caller, self.app, self.tool) == (caller, app, tool)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "caller": self.caller,
            "app": self.app,
            "tool": self.tool,
            "decision": self.decision,
            "once": self.once,
            "created": self.created,
            "source": self.source,
        }

    @property
    def scope(self) -> str:
        """Whom and what it is about, in words: 'caller "Claude", io.mpv:seek'."""
        who = f'caller "{self.caller}"' if self.caller is not None else "any caller"
        what = f"{self.app}:{self.tool}" if self.tool is not None else f"every tool of {self.app}"
        if self.tool is None and self.decision == "allow":
            what += " not marked destructive"
        return f"{who}, {what}"


@dataclass(frozen=True, slots=True)
class Verdict:
    mode: Mode
    why: str
    """what decided it, for messages: a stored decision, a rule or the default"""
    grant: Grant | None = None
    """the stored decision that decided, if one did"""


def rule_matches(rule: ConsentRule, caller: str, app: str, tool: str) -> bool:
    return (
        rule.app in (ANY, app)
        and (rule.caller is None or rule.caller in (ANY, caller))
        and (rule.tool is None or rule.tool in (ANY, tool))
    )


def stored(grants: Iterable[Grant], caller: str, app: str, tool: str, *, destructive: bool = False) -> Grant | None:
    """The stored decision for a call: a deny wins over an allow, and a lasting one is used before a one-time one."""
    matching = [g for g in grants if g.covers(caller, app, tool, destructive=destructive)]
    return min(matching, key=lambda g: (g.decision != "deny", g.once), default=None)


def decide(
    grants: Iterable[Grant],
    rules: Iterable[ConsentRule],
    default: str,
    *,
    caller: str,
    app: str,
    tool: str,
    trusted: bool = False,
    read_only: bool = False,
    destructive: bool = False,
    read_only_default: str = "ask",
) -> Verdict:
    """The verdict for `caller` running `app`'s `tool`.

    A `trusted` caller (the user at their own terminal) is allowed unless a stored decision or a rule denies.
    `read_only` and `destructive` say how the tool is marked (for `read_only`, only where its marks are
    trusted); `read_only_default` is `consent.readOnly`.
    """
    grant = stored(grants, caller, app, tool, destructive=destructive)
    if grant is not None:
        kind = "one-time decision" if grant.once else "stored decision"
        return Verdict(grant.decision, f"the {kind} {grant.id} ({grant.scope})", grant)
    for index, rule in enumerate(rules):
        if rule_matches(rule, caller, app, tool):
            mode = _mode(rule.decision)
            if trusted and mode != "deny":
                return Verdict("allow", "the command line")
            return Verdict(mode, f"consent.rules[{index}] of the config")
    if trusted:
        return Verdict("allow", "the command line")
    if read_only and read_only_default == "allow":
        return Verdict("allow", 'consent.readOnly "allow" of the config (the tool is marked read-only)')
    return Verdict(_mode(default), f'consent.default "{default}" of the config')


def _mode(text: str) -> Mode:
    if text == "allow":
        return "allow"
    if text == "deny":
        return "deny"
    return "ask"

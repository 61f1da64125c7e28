"""Who may run what: stored decisions, then config rules, then the default."""

from __future__ import annotations

import pytest

from aai_gateway.config import ConsentRule
from aai_gateway.consent import Grant, decide
from aai_gateway.consent.policy import stored


def grant(app: str, decision: str, caller: str | None = None, tool: str | None = None, *, once: bool = False) -> Grant:
    assert decision in ("allow", "deny")
    return Grant(
        id=f"{decision}-{caller}-{app}-{tool}-{once}",
        app=app,
        decision="allow" if decision == "allow" else "deny",
        caller=caller,
        tool=tool,
        once=once,
    )


RULES = (
    ConsentRule(app="io.mpv", tool="stop", decision="deny"),
    ConsentRule(app="io.mpv", caller="Cursor", decision="ask"),
    ConsentRule(app="io.mpv", decision="allow"),
    ConsentRule(app="*", tool="delete_note", decision="deny"),
    ConsentRule(app="dev.aai.notes", caller="*", tool="*", decision="allow"),
)


@pytest.mark.parametrize(
    ("caller", "app", "tool", "mode", "why"),
    [
        ("Claude", "io.mpv", "stop", "deny", "consent.rules[0]"),
        ("Cursor", "io.mpv", "stop", "deny", "consent.rules[0]"),  # first match wins
        ("Cursor", "io.mpv", "pause", "ask", "consent.rules[1]"),
        ("Claude", "io.mpv", "pause", "allow", "consent.rules[2]"),
        ("Claude", "dev.aai.notes", "delete_note", "deny", "consent.rules[3]"),  # "*" app
        ("Claude", "com.example", "delete_note", "deny", "consent.rules[3]"),
        ("Claude", "dev.aai.notes", "add_note", "allow", "consent.rules[4]"),  # "*" caller and tool
        ("Claude", "com.example", "anything", "ask", 'consent.default "ask"'),
    ],
)
def test_rules_in_order_then_the_default(caller: str, app: str, tool: str, mode: str, why: str) -> None:
    verdict = decide((), RULES, "ask", caller=caller, app=app, tool=tool)
    assert (verdict.mode, verdict.grant) == (mode, None)
    assert why in verdict.why


@pytest.mark.parametrize("default", ["allow", "ask", "deny"])
def test_the_default_applies_when_nothing_matches(default: str) -> None:
    assert decide((), (), default, caller="c", app="a", tool="t").mode == default


def test_stored_decisions_come_before_rules_and_the_default() -> None:
    grants = [grant("io.mpv", "allow", "Claude", "stop"), grant("com.example", "deny")]
    verdict = decide(grants, RULES, "allow", caller="Claude", app="io.mpv", tool="stop")
    assert verdict.mode == "allow"
    assert verdict.grant == grants[0]
    assert "stored decision" in verdict.why
    assert decide(grants, RULES, "allow", caller="Claude", app="com.example", tool="x").mode == "deny"
    # another caller is not covered by Claude's decision: the rule decides
    assert decide(grants, RULES, "allow", caller="Cline", app="io.mpv", tool="stop").mode == "deny"


@pytest.mark.parametrize(
    ("grants", "expected"),
    [
        # a deny wins over an allow, whatever their scope
        ([grant("a", "allow", "c", "t"), grant("a", "deny", "c")], "deny"),
        ([grant("a", "allow", "c"), grant("a", "deny", None, "t")], "deny"),
        ([grant("a", "deny", "c", "t"), grant("a", "allow")], "deny"),
        # a whole-app and an any-caller decision cover the tool and the caller
        ([grant("a", "allow")], "allow"),
        ([grant("a", "allow", "c")], "allow"),
        ([grant("a", "allow", None, "t")], "allow"),
        # decisions about another caller, tool or app do not apply
        ([grant("a", "deny", "other"), grant("a", "deny", "c", "other"), grant("b", "deny")], "ask"),
    ],
)
def test_stored_precedence(grants: list[Grant], expected: str) -> None:
    assert decide(grants, (), "ask", caller="c", app="a", tool="t").mode == expected


def test_a_lasting_decision_is_used_before_a_one_time_one() -> None:
    once_allow, lasting_allow = grant("a", "allow", "c", "t", once=True), grant("a", "allow", "c")
    assert stored([once_allow, lasting_allow], "c", "a", "t") == lasting_allow
    assert stored([once_allow], "c", "a", "t") == once_allow
    once_deny, lasting_deny = grant("a", "deny", "c", "t", once=True), grant("a", "deny")
    assert stored([once_deny, lasting_allow, lasting_deny], "c", "a", "t") == lasting_deny
    assert stored([lasting_allow, once_deny], "c", "a", "t") == once_deny


def test_the_command_line_is_allowed_unless_a_rule_or_decision_denies() -> None:
    def mode(grants: list[Grant], rules: tuple[ConsentRule, ...], default: str) -> str:
        return decide(grants, rules, default, caller="cli", app="io.mpv", tool="stop", trusted=True).mode

    assert mode([], (), "ask") == "allow"
    assert mode([], (), "deny") == "allow"
    assert mode([], (ConsentRule(app="io.mpv", decision="ask"),), "ask") == "allow"
    assert mode([], RULES, "ask") == "deny"
    assert mode([grant("io.mpv", "deny", "cli")], (), "allow") == "deny"
    assert mode([grant("io.mpv", "allow", "cli", "stop")], RULES, "ask") == "allow"


# Marks from the descriptor: consent.readOnly lets read-only tools run unasked when nothing more specific
# decides; a whole-app allow never covers a destructive tool. Each row: stored decisions, rules,
# (consent.default, consent.readOnly), how the tool is marked, (the verdict, what decided it).
APP_ALLOW = grant("a", "allow", "c")
TOOL_ALLOW = grant("a", "allow", "c", "t")
APP_DENY = grant("a", "deny", None)
TOOL_ASK = ConsentRule(app="a", tool="t", decision="ask")
APP_RULE = ConsentRule(app="a", decision="allow")
DENY_RULE = ConsentRule(app="a", tool="t", decision="deny")


@pytest.mark.parametrize(
    ("grants", "rules", "policy", "marks", "expected"),
    [
        # consent.readOnly "allow": read-only tools run when no stored decision or rule decides ...
        ([], (), ("ask", "allow"), "read_only", ("allow", 'consent.readOnly "allow"')),
        ([], (), ("deny", "allow"), "read_only", ("allow", 'consent.readOnly "allow"')),
        # ... others still follow consent.default
        ([], (), ("ask", "allow"), "", ("ask", 'consent.default "ask"')),
        ([], (), ("ask", "allow"), "destructive", ("ask", 'consent.default "ask"')),
        # "ask" (the default) gives read-only tools no special treatment
        ([], (), ("ask", "ask"), "read_only", ("ask", 'consent.default "ask"')),
        ([], (), ("allow", "ask"), "read_only", ("allow", 'consent.default "allow"')),
        # stored decisions and rules win over consent.readOnly, whatever they say
        ([APP_DENY], (), ("ask", "allow"), "read_only", ("deny", "stored decision")),
        ([], (DENY_RULE,), ("ask", "allow"), "read_only", ("deny", "consent.rules[0]")),
        ([], (TOOL_ASK,), ("ask", "allow"), "read_only", ("ask", "consent.rules[0]")),
        # a whole-app allow does not cover a destructive tool; a decision naming the tool does
        ([APP_ALLOW], (), ("ask", "ask"), "", ("allow", "stored decision")),
        ([APP_ALLOW], (), ("ask", "ask"), "destructive", ("ask", 'consent.default "ask"')),
        ([APP_ALLOW, TOOL_ALLOW], (), ("ask", "ask"), "destructive", ("allow", "stored decision")),
        ([APP_ALLOW], (), ("deny", "ask"), "destructive", ("deny", 'consent.default "deny"')),
        # a deny covers it whatever its scope; rules and the default allow it as written
        ([APP_DENY, TOOL_ALLOW], (), ("ask", "ask"), "destructive", ("deny", "stored decision")),
        ([APP_ALLOW], (APP_RULE,), ("ask", "ask"), "destructive", ("allow", "consent.rules[0]")),
        ([APP_ALLOW], (), ("allow", "ask"), "destructive", ("allow", 'consent.default "allow"')),
    ],
)
def test_marks_take_their_place_in_the_precedence(
    grants: list[Grant],
    rules: tuple[ConsentRule, ...],
    policy: tuple[str, str],
    marks: str,
    expected: tuple[str, str],
) -> None:
    (default, read_only_default), (mode, why) = policy, expected
    verdict = decide(
        grants,
        rules,
        default,
        caller="c",
        app="a",
        tool="t",
        read_only=marks == "read_only",
        destructive=marks == "destructive",
        read_only_default=read_only_default,
    )
    assert (verdict.mode, why in verdict.why) == (mode, True), verdict.why


def test_the_command_line_runs_destructive_tools_unless_denied() -> None:
    assert decide([], (), "ask", caller="cli", app="a", tool="t", trusted=True, destructive=True).mode == "allow"
    denied = decide([APP_DENY], (), "ask", caller="cli", app="a", tool="t", trusted=True, destructive=True)
    assert denied.mode == "deny"


def test_a_whole_app_allow_says_what_it_leaves_out() -> None:
    assert APP_ALLOW.scope == 'caller "c", every tool of a not marked destructive'
    assert APP_DENY.scope == "any caller, every tool of a"
    assert TOOL_ALLOW.scope == 'caller "c", a:t'

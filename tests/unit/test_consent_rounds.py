"""Consent between the rounds of a call: a question's key, what a round answers, and a gate's question."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from aai_gateway.consent import Answer, Question
from aai_gateway.consent.rounds import InputNeeded, Round, key
from aai_gateway.service import Caller, Gateway
from tests.unit.test_consent_gate import APP, OTHER, TOOL, gate

pytestmark = pytest.mark.anyio

ASKED = Question("agent", "dev.aai.notes", "Notes", "add_note", "Add a note", (("title", '"x"'),))


@pytest.mark.parametrize(
    ("other", "same"),
    [
        (replace(ASKED, arguments=(("title", '"y"'),)), True),  # the round binds the arguments, not the key
        (replace(ASKED, caller="other"), True),
        (replace(ASKED, tool="list_notes"), False),
        (replace(ASKED, app="dev.aai.other"), False),
        (replace(ASKED, destructive=True), False),
        (replace(ASKED, text="Start this program: /bin/a"), False),
        (replace(ASKED, choices=((Answer.APP, "yes"), (Answer.DENY, "no"))), False),
    ],
)
def test_a_question_keeps_its_key_only_while_it_asks_the_same(other: Question, same: bool) -> None:
    assert (key(other) == key(ASKED)) is same


async def test_a_round_answers_what_was_answered_and_ends_at_the_rest() -> None:
    round_ = Round({key(ASKED): Answer.ONCE, key(replace(ASKED, tool="x")): None})
    assert await round_.ask(ASKED) is Answer.ONCE
    assert await round_.ask(replace(ASKED, tool="x")) is None
    with pytest.raises(InputNeeded) as needed:
        await round_.ask(replace(ASKED, tool="other"))
    assert [q.tool for q in needed.value.questions] == ["other"]
    assert not isinstance(needed.value, Exception)  # no `except Exception` on the way takes it for a failure


def test_the_gate_says_which_question_a_call_would_ask_and_uses_up_nothing(tmp_path: Path) -> None:
    consent = gate(tmp_path, consent_default="ask")
    asked = consent.question("agent", APP, TOOL, {"title": "x", "pin": "1234"})
    assert asked is not None
    assert (asked.app, asked.tool) == ("dev.aai.notes", "add_note")
    assert "1234" not in asked.message()
    pending = consent.store.ask_later("agent", "dev.aai.notes", "add_note", (), "stdio")
    once = consent.store.decide(pending.id, Answer.ONCE)
    assert consent.question("agent", APP, TOOL, {}) is None
    assert consent.store.use(once.id), "asking which question a call would ask used up a one-time allow"
    assert gate(tmp_path / "allowing", consent_default="allow").question("agent", APP, OTHER, {}) is None


async def test_a_question_met_while_a_batch_runs_ends_the_batch_instead_of_vanishing(echo_gateway: Gateway) -> None:
    """The MCP layer asks a batch's questions first; one it could not foresee still ends the call to ask."""
    calls = [{"app": "dev.aai.echo", "tool": "echo", "args": {"text": "x"}}]
    with pytest.raises(InputNeeded) as needed:
        await echo_gateway.batch(calls, Caller(name="agent", transport="stdio", ask=Round({}).ask))
    assert [q.tool for q in needed.value.questions] == ["echo"]
    echo_gateway.history.flush()
    assert echo_gateway.history.query() == [], "the round that asked was recorded as a call"

"""Calls waiting for a decision: kept, listed and decided (what the web UI will call)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from aai_gateway.consent import Answer, ConsentStore, PendingRequest
from aai_gateway.consent.pending import MAX_PENDING, fresh, remember

NOW = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)


def request(caller: str, tool: str = "t", created: datetime = NOW, app: str = "a") -> PendingRequest:
    return PendingRequest(f"id-{caller}-{tool}", caller, app, tool, (("text", '"hi"'),), created.isoformat())


def test_the_same_caller_app_and_tool_keep_one_request_with_its_first_id() -> None:
    first = request("Claude")
    kept, stored = remember((), first, NOW)
    assert kept == (first,)
    newer = PendingRequest("new-id", "Claude", "a", "t", (("text", '"bye"'),), NOW.isoformat())
    kept, stored = remember(kept, newer, NOW)
    assert stored.id == first.id
    assert stored.arguments == (("text", '"bye"'),)
    assert kept == (stored,)
    kept, _ = remember(kept, request("Claude", "other"), NOW)
    assert [p.tool for p in kept] == ["t", "other"]


def test_stale_requests_are_dropped_and_the_newest_are_kept() -> None:
    old = request("old", created=NOW - timedelta(days=2))
    kept, _ = remember((old,), request("new"), NOW)
    assert [p.caller for p in kept] == ["new"]
    many: tuple[PendingRequest, ...] = ()
    for index in range(MAX_PENDING + 5):
        many, _ = remember(many, request(f"c{index}"), NOW)
    assert len(many) == MAX_PENDING
    assert many[-1].caller == f"c{MAX_PENDING + 4}"
    assert fresh((request("x", created=NOW - timedelta(hours=23)),), NOW) != ()


def test_requests_are_listed_with_what_the_ui_shows(tmp_path: Path) -> None:
    store = ConsentStore(tmp_path / "consent.json")
    made = store.ask_later("Claude", "dev.aai.notes", "add_note", (("title", '"Groceries"'),), "stdio")
    again = ConsentStore(store.path).ask_later("Claude", "dev.aai.notes", "add_note", (("title", '"Milk"'),), "http")
    assert again.id == made.id
    (listed,) = ConsentStore(store.path).pending()
    assert listed.to_json() == {
        "id": made.id,
        "caller": "Claude",
        "app": "dev.aai.notes",
        "tool": "add_note",
        "arguments": [["title", '"Milk"']],
        "created": again.created,
        "transport": "http",
        "destructive": False,
    }
    assert store.pending_request(made.id) == listed
    assert store.pending_request("nope") is None


@pytest.mark.parametrize(
    ("answer", "decision", "tool", "once"),
    [
        (Answer.ONCE, "allow", "t", True),
        (Answer.TOOL, "allow", "t", False),
        (Answer.APP, "allow", None, False),
        (Answer.DENY, "deny", "t", True),
        (Answer.NEVER, "deny", "t", False),
    ],
)
def test_deciding_a_request_stores_the_decision_the_answer_means(
    tmp_path: Path, answer: Answer, decision: str, tool: str | None, once: bool
) -> None:
    store = ConsentStore(tmp_path / "consent.json")
    made = store.ask_later("Claude", "a", "t", ())
    grant = store.decide(made.id, answer, source="ui")
    assert (grant.caller, grant.app, grant.tool, grant.decision, grant.once) == ("Claude", "a", tool, decision, once)
    assert grant.source == "ui"
    assert ConsentStore(store.path).decisions() == (grant,)
    assert store.pending() == ()
    with pytest.raises(LookupError, match="decided or expired"):
        store.decide(made.id, answer)


def test_a_lasting_decision_settles_the_requests_it_covers(tmp_path: Path) -> None:
    store = ConsentStore(tmp_path / "consent.json")
    store.ask_later("Claude", "a", "t", ())
    store.ask_later("Claude", "a", "u", ())
    store.ask_later("Cline", "a", "t", ())
    store.ask_later("Claude", "b", "t", ())
    store.allow("a", "Claude")
    assert [(p.caller, p.app) for p in store.pending()] == [("Cline", "a"), ("Claude", "b")]
    store.deny("b")
    assert [(p.caller, p.app) for p in store.pending()] == [("Cline", "a")]

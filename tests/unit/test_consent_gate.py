"""Consent before a call: what the user is asked, what is kept, and what an agent is told."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.config import ConsentRule, Settings
from aai_gateway.consent import Answer, ConsentGate, Question, command
from aai_gateway.consent.gate import MAX_VERDICTS
from aai_gateway.consent.summary import summarize
from aai_gateway.descriptor import Annotations, Binding, Descriptor, Tool
from aai_gateway.descriptor.model import Name
from aai_gateway.errors import ConsentRequired, PermissionDenied

pytestmark = pytest.mark.anyio

TOOL = Tool(
    name="add_note",
    description="Add a note",
    parameters={"type": "object", "properties": {"title": {"type": "string"}, "pin": {"x-sensitive": True}}},
)
OTHER = Tool(name="list_notes", description="List notes", parameters={"type": "object"})
APP = Descriptor(
    app_id="dev.aai.notes",
    names=(Name("Notes"),),
    description="notes",
    bindings={"linux": Binding("linux", "dbus", (TOOL, OTHER))},
    shape="multi",
)


def gate(tmp_path: Path, **changes: Any) -> ConsentGate:
    settings = Settings(scan_paths=(), platform="linux", aai_home=tmp_path, **changes)
    return ConsentGate(settings)


class User:
    def __init__(self, *answers: Answer | None) -> None:
        self.answers = list(answers)
        self.questions: list[Question] = []

    async def __call__(self, question: Question) -> Answer | None:
        self.questions.append(question)
        return self.answers.pop(0)


async def test_allow_once_is_asked_again_next_time(tmp_path: Path) -> None:
    consent, user = gate(tmp_path), User(Answer.ONCE, Answer.ONCE)
    await consent.check("Claude", APP, TOOL, {"title": "Milk", "pin": "1234"}, ask=user)
    await consent.check("Claude", APP, TOOL, {"title": "Eggs"}, ask=user)
    assert len(user.questions) == 2
    question = user.questions[0]
    assert (question.caller, question.app, question.app_name, question.tool) == (
        "Claude",
        "dev.aai.notes",
        "Notes",
        "add_note",
    )
    assert question.arguments == (("title", '"Milk"'), ("pin", "[redacted]"))
    assert question.message().splitlines() == [
        '"Claude" wants to run add_note of Notes (dev.aai.notes).',
        'Arguments: title: "Milk", pin: [redacted]',
        "What it does: Add a note",
    ]
    assert consent.store.decisions() == ()


@pytest.mark.parametrize(("answer", "asked_for_other_tool"), [(Answer.TOOL, True), (Answer.APP, False)])
async def test_always_answers_are_kept(tmp_path: Path, answer: Answer, asked_for_other_tool: bool) -> None:
    consent, user = gate(tmp_path), User(answer, Answer.ONCE)
    await consent.check("Claude", APP, TOOL, {}, ask=user)
    await consent.check("Claude", APP, TOOL, {}, ask=user)
    await consent.check("Claude", APP, OTHER, {}, ask=user)
    assert len(user.questions) == (2 if asked_for_other_tool else 1)
    (kept,) = consent.store.decisions()
    assert (kept.caller, kept.decision, kept.source) == ("Claude", "allow", "asked")
    assert kept.tool == ("add_note" if answer is Answer.TOOL else None)
    # another caller is asked for itself
    other = User(Answer.ONCE)
    await consent.check("Cline", APP, TOOL, {}, ask=other)
    assert len(other.questions) == 1


async def test_deny_refuses_once_and_never_refuses_from_now_on(tmp_path: Path) -> None:
    consent, user = gate(tmp_path), User(Answer.DENY, Answer.NEVER)
    with pytest.raises(
        PermissionDenied, match=re.escape('the user refused "Claude" running dev.aai.notes:add_note') + "$"
    ):
        await consent.check("Claude", APP, TOOL, {}, ask=user)
    with pytest.raises(PermissionDenied, match="stored as decision") as refused:
        await consent.check("Claude", APP, TOOL, {}, ask=user)
    (kept,) = consent.store.decisions()
    assert f"`aai-gateway consent revoke --id {kept.id}`" in refused.value.detail
    with pytest.raises(PermissionDenied, match=f"refused by the stored decision {kept.id}"):
        await consent.check("Claude", APP, TOOL, {}, ask=user)
    assert len(user.questions) == 2


async def test_a_client_that_cannot_ask_gets_consent_required_with_the_command(tmp_path: Path) -> None:
    consent = gate(tmp_path)
    with pytest.raises(ConsentRequired) as required:
        await consent.check("Claude Desktop", APP, TOOL, {"title": "x"}, transport="stdio")
    detail = required.value.detail
    assert "no MCP elicitation" in detail
    assert '`aai-gateway consent allow --caller "Claude Desktop" dev.aai.notes --tool add_note`' in detail
    assert "/ui/consent" not in detail
    (pending,) = consent.store.pending()
    assert (pending.caller, pending.app, pending.tool, pending.transport) == (
        "Claude Desktop",
        "dev.aai.notes",
        "add_note",
        "stdio",
    )
    consent.ui_url = "http://127.0.0.1:3000/ui/consent"
    with pytest.raises(ConsentRequired, match=f"decide pending request {pending.id} at http://127.0.0.1:3000/ui/c"):
        await consent.check("Claude Desktop", APP, TOOL, {}, ask=User(None))
    consent.store.decide(pending.id, Answer.ONCE)
    await consent.check("Claude Desktop", APP, TOOL, {})
    with pytest.raises(ConsentRequired, match="the user gave no answer"):
        await consent.check("Claude Desktop", APP, TOOL, {}, ask=User(None))


async def test_policy_denials_say_what_refused_and_how_to_change_it(tmp_path: Path) -> None:
    consent = gate(tmp_path, consent_default="deny", config_file=tmp_path / "config.json")
    with pytest.raises(PermissionDenied) as refused:
        await consent.check("Claude", APP, TOOL, {}, ask=User())
    assert 'refused by consent.default "deny" of the config' in refused.value.detail
    assert f"change consent in {tmp_path / 'config.json'}" in refused.value.detail
    assert '`aai-gateway consent allow --caller "Claude" dev.aai.notes --tool add_note`' in refused.value.detail
    consent.store.allow("dev.aai.notes", "Claude", "add_note")
    await consent.check("Claude", APP, TOOL, {})

    ruled = gate(tmp_path / "r", consent_rules=(ConsentRule(app="dev.aai.notes", tool="add_note", decision="deny"),))
    with pytest.raises(PermissionDenied, match=r"refused by consent.rules\[0\] of the config"):
        await ruled.check("Claude", APP, TOOL, {}, ask=User())
    await ruled.check("Claude", APP, OTHER, {}, ask=User(Answer.ONCE))


async def test_the_command_line_is_not_asked(tmp_path: Path) -> None:
    consent = gate(tmp_path)
    await consent.check("cli", APP, TOOL, {}, trusted=True)
    consent.store.deny("dev.aai.notes", "cli")
    with pytest.raises(PermissionDenied):
        await consent.check("cli", APP, TOOL, {}, trusted=True)


async def test_a_web_app_is_known_by_its_site(tmp_path: Path) -> None:
    consent = gate(tmp_path)
    with pytest.raises(ConsentRequired, match=re.escape('consent allow --caller "Claude" https://evil.example --tool')):
        await consent.check("Claude", APP, TOOL, {}, app_key="https://evil.example")
    consent.store.allow("dev.aai.notes", "Claude")
    with pytest.raises(ConsentRequired):  # the id it claims does not lend it the installed app's decisions
        await consent.check("Claude", APP, TOOL, {}, app_key="https://evil.example")


def test_commands_are_quoted_for_a_shell() -> None:
    assert command("allow", "Claude Desktop", "io.mpv", "seek") == (
        'aai-gateway consent allow --caller "Claude Desktop" io.mpv --tool seek'
    )
    assert command("allow", None, "io.mpv") == "aai-gateway consent allow io.mpv"
    assert command("allow", 'x"; rm -rf ~; "', "io.mpv") == (
        "aai-gateway consent allow --caller 'x\"; rm -rf ~; \"' io.mpv"
    )
    assert command("allow", "$(id)", "a b") == "aai-gateway consent allow --caller '$(id)' 'a b'"


def test_summaries_are_short_redacted_and_cannot_disguise_themselves() -> None:
    args = {
        "title": "x" * 500,
        "api_key": "sk-123",
        "nested": {"Token": "abc", "ok": [1, {"password": "p"}]},
        "text": "line\nnext\u202eevil",
    }
    pairs = dict(summarize(args))
    assert len(pairs["title"]) == 80
    assert pairs["title"].endswith("…")
    assert pairs["api_key"] == "[redacted]"
    assert pairs["nested"] == '{"Token": "[redacted]", "ok": [1, {"password": "[redacted]"}]}'
    assert "\n" not in pairs["text"]
    assert "\u202e" not in pairs["text"]
    assert "\\u202e" in pairs["text"]
    many = summarize({f"k{i}": i for i in range(12)})
    assert many[-1] == ("…", "4 more")
    assert len(many) == 9


async def held_call(consent: ConsentGate) -> Any:
    """A call from a client that cannot be asked, started in the background; returns once it is pending."""
    call = asyncio.ensure_future(consent.check("Cursor", APP, TOOL, {"title": "x"}, transport="http"))
    while not consent.store.pending():
        await asyncio.sleep(0.01)
    return call


@pytest.mark.parametrize(("answer", "runs"), [(Answer.ONCE, True), (Answer.APP, True), (Answer.DENY, False)])
async def test_under_the_ui_a_call_waits_for_a_decision_there(tmp_path: Path, answer: Answer, runs: bool) -> None:
    consent = gate(tmp_path, consent_wait_seconds=30)
    consent.ui_url = "http://127.0.0.1:3000/ui/consent"
    call = await held_call(consent)
    assert not call.done()
    (pending,) = consent.store.pending()
    consent.store.decide(pending.id, answer)
    if runs:
        await call
    else:
        with pytest.raises(PermissionDenied):
            await call
    assert not consent.store.pending()


async def test_a_held_call_gives_up_with_consent_required(tmp_path: Path) -> None:
    consent = gate(tmp_path, consent_wait_seconds=0.3)
    consent.ui_url = "http://127.0.0.1:3000/ui/consent"
    with pytest.raises(ConsentRequired, match="decide pending request"):
        await consent.check("Cursor", APP, TOOL, {"title": "x"})


async def test_without_the_ui_nothing_waits(tmp_path: Path) -> None:
    consent = gate(tmp_path, consent_wait_seconds=30)
    with pytest.raises(ConsentRequired):
        await consent.check("Cursor", APP, TOOL, {"title": "x"})


READ = Tool("count_notes", "Count notes", {"type": "object"}, annotations=Annotations(read_only=True))
WIPE = Tool("delete_note", "Delete a note", {"type": "object"}, annotations=Annotations(destructive=True))
MARKED = Descriptor(
    app_id="dev.aai.notes",
    names=(Name("Notes"),),
    description="notes",
    bindings={"linux": Binding("linux", "dbus", (TOOL, READ, WIPE))},
    shape="multi",
)


async def test_read_only_tools_run_unasked_when_config_says_so(tmp_path: Path) -> None:
    consent = gate(tmp_path, consent_read_only="allow")
    await consent.check("Claude", MARKED, READ, {})
    with pytest.raises(ConsentRequired):
        await consent.check("Claude", MARKED, TOOL, {})
    with pytest.raises(ConsentRequired):  # a website's own marks do not skip the question
        await consent.check("Claude", MARKED, READ, {}, app_key="https://evil.example", marks_trusted=False)
    with pytest.raises(ConsentRequired):  # the default is to ask
        await gate(tmp_path / "other").check("Claude", MARKED, READ, {})


async def test_a_destructive_tool_is_asked_about_on_its_own(tmp_path: Path) -> None:
    consent, user = gate(tmp_path), User(Answer.APP, Answer.APP, Answer.TOOL)
    await consent.check("Claude", MARKED, TOOL, {}, ask=user)
    await consent.check("Claude", MARKED, READ, {}, ask=user)  # covered by the answer for the app
    assert len(user.questions) == 1
    await consent.check("Claude", MARKED, WIPE, {"id": "n1"}, ask=user)  # not covered: asked, and it runs
    assert len(user.questions) == 2
    assert user.questions[1].destructive
    assert user.questions[1].message().splitlines()[-1] == (
        "Its app marks it destructive: it may delete or overwrite data. "
        '"Always allow every tool of this app" does not cover it; "Always allow this tool" does.'
    )
    assert "destructive" not in user.questions[0].message()
    await consent.check("Claude", MARKED, WIPE, {"id": "n2"}, ask=user)  # asked again, now kept for the tool
    await consent.check("Claude", MARKED, WIPE, {"id": "n3"}, ask=user)
    assert len(user.questions) == 3


async def test_consent_required_for_a_destructive_tool_names_the_tool_allow(tmp_path: Path) -> None:
    consent = gate(tmp_path)
    consent.store.allow("dev.aai.notes", "Claude")
    await consent.check("Claude", MARKED, TOOL, {})
    with pytest.raises(ConsentRequired) as required:
        await consent.check("Claude", MARKED, WIPE, {})
    detail = required.value.detail
    assert '`aai-gateway consent allow --caller "Claude" dev.aai.notes --tool delete_note`' in detail
    assert "it is marked destructive, so an allow for every tool of dev.aai.notes does not cover it" in detail
    (pending,) = consent.store.pending()
    assert pending.destructive
    consent.store.allow("dev.aai.notes", None)  # another whole-app allow leaves the request pending
    assert consent.store.pending() == (pending,)
    consent.store.decide(pending.id, Answer.APP)  # answering its own request runs that call once
    await consent.check("Claude", MARKED, WIPE, {})
    with pytest.raises(ConsentRequired):
        await consent.check("Claude", MARKED, WIPE, {})


async def test_how_each_question_ended_is_told_for_the_history(tmp_path: Path) -> None:
    told: list[str] = []
    consent = gate(tmp_path)
    await consent.check("Claude", APP, TOOL, {"title": "a"}, ask=User(Answer.ONCE), asked=told.append)
    with pytest.raises(PermissionDenied):
        await consent.check("Claude", APP, TOOL, {"title": "b"}, ask=User(Answer.NEVER), asked=told.append)
    with pytest.raises(ConsentRequired):
        await consent.check("Claude", APP, OTHER, {}, ask=User(None), asked=told.append)
    assert told == ["once", "never", "unanswered"]
    await consent.check("Claude", APP, OTHER, {}, ask=User(Answer.TOOL), asked=told.append)
    await consent.check("Claude", APP, OTHER, {}, ask=User(), asked=told.append)  # allowed now: nothing asked
    assert told == ["once", "never", "unanswered", "tool"]

    held = gate(tmp_path / "held", consent_wait_seconds=30)
    held.ui_url = "http://127.0.0.1:3000/ui/consent"
    waiting: list[str] = []
    call = asyncio.ensure_future(held.check("Cursor", APP, TOOL, {"title": "x"}, asked=waiting.append))
    while not held.store.pending():
        await asyncio.sleep(0.01)
    (pending,) = held.store.pending()
    held.store.decide(pending.id, Answer.ONCE)
    await call
    assert waiting == ["decided"]


async def test_kept_verdicts_follow_the_stored_decisions_and_stay_bounded(tmp_path: Path) -> None:
    consent = gate(tmp_path, consent_default="deny")
    with pytest.raises(PermissionDenied):
        await consent.check("Claude", APP, TOOL, {})
    ConsentGate(consent.settings).store.allow("dev.aai.notes", "Claude", "add_note")  # as another process would
    await consent.check("Claude", APP, TOOL, {})
    ConsentGate(consent.settings).store.deny("dev.aai.notes", "Claude", "add_note")
    with pytest.raises(PermissionDenied):
        await consent.check("Claude", APP, TOOL, {})
    for n in range(5000):  # callers name themselves: any number of them
        consent.verdict(f"caller {n}", "dev.aai.notes", "add_note")
    assert len(consent._verdicts) <= MAX_VERDICTS

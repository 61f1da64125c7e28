"""The Workflows page's Run form refuses what it cannot take, in one line, before anything runs; the page
escapes what a workflow file says."""

from __future__ import annotations

import json
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from aai_gateway.web import UI_PATH
from tests.web.ui_support import HOSTILE, ORIGIN, XSS_APP, Ui, make_ui
from tests.workflows.common import ECHO_TWICE


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[Ui]:
    folder = tmp_path / ".aai" / "workflows"
    folder.mkdir(parents=True)
    (folder / "echo-twice.json").write_text(json.dumps(ECHO_TWICE))
    hostile = ECHO_TWICE | {
        "name": f"Evil {HOSTILE}",
        "inputs": {"type": "object", "properties": {HOSTILE: {"type": "string", "default": HOSTILE}}},
        "steps": [{"id": "a", "app": "dev.aai.echo", "tool": "echo", "args": {"text": "x"}}],
        "output": None,
    }
    (folder / "evil.json").write_text(json.dumps(hostile))
    (folder / "broken.json").write_text(json.dumps({"name": HOSTILE, "steps": []}))
    asks = {"name": "Asks", "steps": [{"id": "a", "app": XSS_APP, "tool": "echo", "args": {"text": "x"}}]}
    (folder / "asks.json").write_text(json.dumps(asks))
    yield from make_ui(tmp_path)


@pytest.mark.hostile("validation")
def test_the_page_escapes_what_workflow_files_say(ui: Ui) -> None:
    ui.login()
    page = ui.client.get(f"{UI_PATH}/workflows")
    assert page.status_code == 200
    assert HOSTILE not in page.text
    text = unescape(page.text)
    assert f"Evil {HOSTILE}" in text
    assert f'name="input.{HOSTILE}"' in text
    assert "broken.json#/steps</code>: needs at least 1 item" in text


@pytest.mark.hostile("validation")
@pytest.mark.parametrize(
    ("form", "status", "said"),
    [
        ({"workflow": "nobody"}, 404, "nobody was not run: No such workflow."),
        ({"workflow": "echo-twice", "input.count": "many"}, 400, "count: must be a whole number, got many"),
        ({"workflow": "echo-twice", "input.loud": "perhaps"}, 400, "loud: must be true or false"),
        ({"workflow": "echo-twice", "json": "[1]"}, 400, "the JSON must be an object of inputs, got list"),
        ({"workflow": "echo-twice", "json": "{"}, 400, "Expecting property name enclosed in double quotes"),
        ({"workflow": "echo-twice", "json": "[" * 20_000}, 400, "is nested too deeply"),
        ({"workflow": "echo-twice", "json": '"' + "x" * 70_000}, 413, "The form is too large."),
        ({"workflow": "echo-twice", "input.count": "3"}, 400, "INVALID_PARAMS"),  # text is required
        ({"workflow": "echo-twice", "json": '{"text": 5}'}, 400, "INVALID_PARAMS"),
    ],
    ids=["unknown", "integer", "boolean", "array", "bad-json", "deep", "huge", "missing", "wrong-type"],
)
def test_bad_inputs_are_refused_before_anything_runs(ui: Ui, form: dict[str, str], status: int, said: str) -> None:
    csrf = ui.login()
    answer = ui.client.post(f"{UI_PATH}/workflows/run", data=form | {"csrf": csrf}, headers={"origin": ORIGIN})
    assert answer.status_code == status, answer.text[:2000]
    assert said in unescape(answer.text)
    assert ui.gateway.history.query(app="aai.workflows") == []


def test_a_post_without_the_csrf_token_or_from_elsewhere_is_refused(ui: Ui) -> None:
    csrf = ui.login()
    form = {"workflow": "echo-twice", "input.text": "x"}
    assert ui.client.post(f"{UI_PATH}/workflows/run", data=form, headers={"origin": ORIGIN}).status_code == 403
    foreign = ui.client.post(
        f"{UI_PATH}/workflows/run", data=form | {"csrf": csrf}, headers={"origin": "http://evil.example"}
    )
    assert foreign.status_code == 403


def test_a_step_not_allowed_yet_waits_on_the_consent_page(ui: Ui) -> None:
    csrf = ui.login()
    answer = ui.client.post(
        f"{UI_PATH}/workflows/run", data={"workflow": "asks", "csrf": csrf}, headers={"origin": ORIGIN}
    )
    assert answer.status_code == 400
    text = unescape(answer.text)
    assert "asks failed: CONSENT_REQUIRED" in text
    assert f'href="{UI_PATH}/consent"' in text
    pending = [(p.caller, p.app, p.tool) for p in ui.gateway.consent.store.pending()]
    assert ("ui", XSS_APP, "echo") in pending
    assert ui.gateway.history.query(app=XSS_APP, caller="ui") == []


def test_a_triggered_workflow_is_approved_on_the_page_as_shown_and_an_edit_withdraws_it(ui: Ui, tmp_path: Path) -> None:
    folder = tmp_path / ".aai" / "workflows"
    timed = ECHO_TWICE | {"on": [{"every": "1h"}]}
    (folder / "hourly.json").write_text(json.dumps(timed))
    ui.gateway.rescan()
    csrf = ui.login()
    shown = unescape(ui.client.get(f"{UI_PATH}/workflows").text)
    assert "Starts on its own" in shown
    assert "every 3600 s" in shown
    assert "dev.aai.echo:echo" in shown
    assert "Not approved" in shown
    fingerprint = shown.split('name="fingerprint" value="', 1)[1].split('"', 1)[0]
    form = {"workflow": "hourly", "fingerprint": fingerprint, "csrf": csrf}
    no_token = {k: v for k, v in form.items() if k != "csrf"}
    assert ui.client.post(f"{UI_PATH}/workflows/approve", data=no_token, headers={"origin": ORIGIN}).status_code == 403
    foreign = {"origin": "http://evil.example"}
    assert ui.client.post(f"{UI_PATH}/workflows/approve", data=form, headers=foreign).status_code == 403
    saved = ui.gateway.shelf.get("hourly")
    assert saved is not None
    assert ui.gateway.approvals.current(saved) is None
    approved = ui.client.post(f"{UI_PATH}/workflows/approve", data=form, headers={"origin": ORIGIN})
    assert approved.status_code == 200
    assert "its triggers start it now" in approved.text
    assert ui.gateway.approvals.current(saved) is not None
    (folder / "hourly.json").write_text(json.dumps(timed | {"on": [{"every": "2h"}]}))
    ui.gateway.rescan()
    stale = ui.client.post(f"{UI_PATH}/workflows/approve", data=form, headers={"origin": ORIGIN})
    assert stale.status_code == 409
    edited = ui.gateway.shelf.get("hourly")
    assert edited is not None
    assert ui.gateway.approvals.current(edited) is None
    withdrawn = ui.client.post(f"{UI_PATH}/workflows/approve", data=form | {"revoke": "1"}, headers={"origin": ORIGIN})
    assert "no longer start it" in withdrawn.text

"""Triggered workflows that fail, on the overview in Debian's Chromium against the installed `aai-gateway serve`:
a workflow whose file trigger keeps failing is held to its maxPerMinute while the gateway answers, and the
overview names it with its trigger, how many runs failed and the last error, linked to the run (whose record
has the trigger and payload); one refused before it ran (a required input no trigger gives) shows too; a
workflow whose trigger runs through is not shown. `workflow list` says the same."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.test_serve import serving
from tests.support import Bus, wait_until
from tests.web.test_browser import CHROMIUM, browser, call_echo, shot
from tests.workflows.common import ECHO, cli, home_env, workflows_home

__all__ = ["browser"]
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (/usr/bin/chromium)"),
]


def workflow(name: str, on: list[dict[str, Any]], tool: str, args: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": name, "on": on, "steps": [{"id": "only", "app": ECHO, "tool": tool, "args": args}], **more}


@pytest.mark.hostile("limits")
def test_a_trigger_that_keeps_failing_is_held_to_its_rate_and_shows_on_the_overview(
    bus: Bus, echo_app: None, tmp_path: Path, browser: Browser
) -> None:
    home = tmp_path / "home"
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    needs_who = {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}
    workflows_home(
        home,
        {
            "keeps-failing": workflow(
                "Fails on each file", [{"file": str(inbox), "maxPerMinute": 2}], "fail", {"message": "no luck"}
            ),
            "needs-who": workflow("Needs who", [{"start": True}], "echo", {"text": "${inputs.who}"}, inputs=needs_who),
            "fine": workflow("Says hello", [{"start": True}], "echo", {"text": "hello"}),
        },
    )
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}}))
    env = home_env(bus, home)
    for workflow_id in ("keeps-failing", "needs-who", "fine"):
        approved = cli(env, "workflow", "approve", workflow_id, "--yes")
        assert approved.returncode == 0, approved.stdout + approved.stderr
    log = tmp_path / "serve.log"

    def triggered(workflow_id: str) -> list[dict[str, Any]]:
        listed = json.loads(cli(env, "history", "--caller", "trigger", "--app", "aai.workflows", "--json").stdout)
        return [e for e in listed if e["tool"] == workflow_id]

    with serving(env, log) as (_, mcp_url), ThreadPoolExecutor(1) as pool:
        wait_until(lambda: "workflow keeps-failing starts on" in log.read_text(), 30, "the file trigger")
        wait_until(lambda: triggered("fine") and triggered("needs-who"), 30, "the start triggers' runs")
        (inbox / "first.txt").write_text("new")
        wait_until(lambda: len(triggered("keeps-failing")) == 1, 30, "the first run")
        (inbox / "second.txt").write_text("new")
        wait_until(lambda: len(triggered("keeps-failing")) == 2, 30, "the second run")
        for n in range(5):  # more fires in the same minute: each held back, and said once in the log
            (inbox / f"more-{n}.txt").write_text("new")
        held = "fired and was held back, as it ran 2 times in the last minute"
        wait_until(lambda: held in log.read_text(), 30, "a fire held back by maxPerMinute")
        assert call_echo(mcp_url, "still answering", pool).result(60) == "still answering"
        runs = triggered("keeps-failing")
        assert [r["status"] for r in runs] == ["error", "error"], runs
        assert log.read_text().count(held) == 1  # one line, however many fires are held back
        event = runs[0]["args"]["event"]
        assert event["trigger"] == f"changes under {inbox}"
        assert event["payload"]["changes"][0]["path"].startswith(str(inbox))
        (refused,) = triggered("needs-who")
        assert refused["status"] == "error"
        assert "who" in refused["error"]["detail"]
        assert refused["args"]["event"]["trigger"] == "the gateway's start"

        see_the_overview(browser, home, mcp_url, inbox, runs[0]["id"])

    listed = cli(env, "workflow", "list")
    assert listed.returncode == 0, listed.stderr
    assert f"!! failing: changes under {inbox}: 2 of 2 runs in the last 24 hours failed;" in listed.stdout
    assert f"({runs[0]['id']}): AUTOMATION_FAILED: The plan failed" in listed.stdout
    assert "!! failing: the gateway's start: 1 of 1 runs in the last 24 hours failed;" in listed.stdout
    as_json = {w["id"]: w["failing"] for w in json.loads(cli(env, "workflow", "list", "--json").stdout)["workflows"]}
    assert as_json["fine"] == []
    assert as_json["keeps-failing"][0]["lastRun"] == runs[0]["id"]


def see_the_overview(browser: Browser, home: Path, mcp_url: str, inbox: Path, last_run: str) -> None:
    token = (home / ".aai" / "web-token").read_text().strip()
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(f"{mcp_url.removesuffix('/mcp')}/ui/login?token={token}")
    card = page.locator("#failing-triggers")
    expect(card.locator("li")).to_have_count(2)
    failing = card.locator('li[data-workflow="keeps-failing"]')
    expect(failing).to_contain_text(f"changes under {inbox}")
    expect(failing).to_contain_text("2 of 2 runs in the last 24 hours failed")
    expect(failing).to_contain_text("no luck")
    expect(card.locator('li[data-workflow="needs-who"]')).to_contain_text("the gateway's start")
    expect(card).not_to_contain_text("fine")
    shot(page, "overview-failing-triggers")
    failing.locator(f'a[href$="/history/{last_run}"]').click()
    expect(page.locator(".facts")).to_contain_text("keeps-failing")
    expect(page.locator("main")).to_contain_text(f"changes under {inbox}")
    expect(page.locator("main")).to_contain_text("second.txt")

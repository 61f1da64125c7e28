"""The Workflows page in Debian's Chromium against the installed `aai-gateway --web`: the workflows with their
inputs and steps, the broken file, a run from the form with each step's outcome and the output, a failing
run, the run in the last runs and its call page, and a form post without the CSRF token refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.mcp_client import web_gateway
from tests.support import Bus
from tests.web.test_browser import CHROMIUM, browser, login_url, shot
from tests.web.ui_support import HOSTILE
from tests.workflows.common import BROKEN, ECHO, ECHO_TWICE, FAILING, home_env, workflows_home

__all__ = ["browser"]
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (/usr/bin/chromium)"),
]


def test_list_run_and_see_a_workflow_on_its_page(bus: Bus, echo_app: None, tmp_path: Path, browser: Browser) -> None:
    home = tmp_path / "home"
    hostile = ECHO_TWICE | {"description": f"Says {HOSTILE}"}
    workflows_home(home, {"echo-twice": hostile, "fails": FAILING, "broken": BROKEN})
    rules = [{"caller": "ui", "app": ECHO, "decision": "allow"}]
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "ask", "rules": rules}}))
    stderr = tmp_path / "stderr.log"
    with web_gateway(home_env(bus, home), stderr):
        url = login_url(stderr)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.on("dialog", lambda dialog: pytest.fail(f"a script ran in the page: {dialog.message}"))
        page.goto(url)
        see_the_list(page)
        run_from_the_form(page)
        fail_and_forge(page, bus, url)


def see_the_list(page: Page) -> None:
    page.get_by_role("link", name="Workflows", exact=True).click()
    expect(page.locator("h1")).to_have_text("Workflows")
    echo = page.locator("#workflow-echo-twice")
    expect(echo).to_contain_text("Echo and add")
    expect(echo).to_contain_text(f"Says {HOSTILE}")
    expect(echo).to_contain_text("dev.aai.echo:echo, dev.aai.echo:add")
    expect(echo.locator("table.inputs")).to_contain_text("count")
    expect(echo.locator("table.inputs")).to_contain_text("integer")
    expect(echo).to_contain_text("Not run yet.")
    expect(page.locator(".problems")).to_contain_text("broken.json#/steps/0/args/t")
    assert page.locator("img").count() == 0
    shot(page, "workflows")


def run_from_the_form(page: Page) -> None:
    echo = page.locator("#workflow-echo-twice")
    echo.locator('input[name="input.text"]').fill("hello")
    echo.locator('input[name="input.count"]').fill("4")
    echo.locator('select[name="input.loud"]').select_option("true")
    echo.locator('button[data-run="echo-twice"]').click()
    result = page.locator("#workflow-result")
    expect(result).to_contain_text("echo-twice ran in")
    expect(result.locator("table.steps")).to_contain_text("dev.aai.echo:add")
    expect(result.locator("table.steps tbody tr")).to_have_count(2)
    output = json.loads(page.locator("#workflow-output").inner_text())
    assert output == {"said": "hello", "sum": 5, "loud": True}
    expect(page.locator('#workflow-echo-twice input[name="input.text"]')).to_have_value("hello")
    shot(page, "workflow-ran")

    # The JSON textarea instead of the fields; the run shows in the last runs, linked to its call.
    page.get_by_role("link", name="Workflows", exact=True).click()
    echo = page.locator("#workflow-echo-twice")
    echo.locator("details summary").click()
    echo.locator('textarea[name="json"]').fill('{"text": "from json"}')
    echo.locator('button[data-run="echo-twice"]').click()
    assert json.loads(page.locator("#workflow-output").inner_text())["said"] == "from json"
    page.get_by_role("link", name="Workflows", exact=True).click()
    runs = page.locator("#workflow-echo-twice table.runs tbody tr")
    expect(runs).to_have_count(2)
    expect(runs.first).to_contain_text("ok")
    runs.first.locator("a").click()
    expect(page.locator("h1")).to_contain_text("Call")
    expect(page.locator(".facts")).to_contain_text("aai.workflows")
    expect(page.locator(".facts")).to_contain_text("echo-twice")


def fail_and_forge(page: Page, bus: Bus, url: str) -> None:
    page.get_by_role("link", name="Workflows", exact=True).click()
    page.locator('#workflow-fails button[data-run="fails"]').click()
    result = page.locator("#workflow-result")
    expect(result).to_contain_text("fails failed: AUTOMATION_FAILED")
    expect(result).to_contain_text("boom (dev.aai.echo:fail): failed")
    expect(result).to_contain_text("on purpose")
    shot(page, "workflow-failed")

    calls = bus.echo_calls()
    base = url.split("/login", maxsplit=1)[0]
    refused = page.request.post(
        f"{base}/workflows/run",
        form={"workflow": "echo-twice", "input.text": "forged"},
        headers={"Origin": base.removesuffix("/ui")},
    )
    assert refused.status == 403
    assert "CSRF" in refused.text()
    assert bus.echo_calls() == calls

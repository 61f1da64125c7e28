"""Runs on the History page in Debian's Chromium against the installed `aai-gateway --web`: a run is one
row with its steps folded beneath it (a <details>, no script), unfolded they link to their call pages,
a step's page links to its run, and the run's page lists its steps with links."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from aai_gateway.history import HistoryStore
from aai_gateway.history.record import RUN_APP
from tests.e2e.mcp_client import web_gateway
from tests.history_runs import STEPS, Step, record_run
from tests.web.test_browser import CHROMIUM, browser, login_url, shot
from tests.web.ui_support import HOSTILE, SCRIPT

__all__ = ["browser"]
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (/usr/bin/chromium)"),
]


def write_history(home: Path) -> None:
    """A run that failed at `lower` and undid a step, a step of a run not recorded yet, and a run whose
    step label is hostile."""
    store = HistoryStore(home / ".aai" / "history.db")
    at = datetime.now(UTC) - timedelta(hours=1)
    try:
        record_run(store, "run-1", at)
        record_run(store, "run-2", at + timedelta(minutes=5), steps=STEPS[:1], with_run=False)
        record_run(store, "run-x", at - timedelta(minutes=5), steps=(Step(HOSTILE, "a.b", "c", 1.0),), workflow="plan")
    finally:
        store.close()


def test_a_run_is_one_row_with_its_steps_folded_beneath(tmp_path: Path, browser: Browser) -> None:
    home = tmp_path / "home"
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API keeps an event loop in this thread
        pool.submit(write_history, home).result(60)
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": os.environ.get("PATH", "")}
    stderr = tmp_path / "stderr.log"
    with web_gateway(env, stderr):
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        page.on("dialog", lambda dialog: pytest.fail(f"a script ran in the page: {dialog.message}"))
        page.goto(login_url(stderr))
        expect(page.locator("h1")).to_have_text("Overview")
        page.get_by_role("link", name="History", exact=True).click()
        expect(page.locator("h1")).to_have_text("History")

        run = page.locator("#call-run-1")
        expect(run).to_contain_text(RUN_APP)
        expect(run).to_contain_text("morning")
        expect(run).to_contain_text("AUTOMATION_FAILED")
        folded = run.locator("xpath=following-sibling::tr[1]")
        expect(folded).to_have_class("steps")
        steps = folded.locator("table.steps tbody tr")
        expect(steps).to_have_count(len(STEPS))
        expect(steps.first).to_be_hidden()
        shot(page, "history-run-folded")
        folded.locator("summary").click()
        expect(folded.locator("summary")).to_have_text(f"{len(STEPS)} steps")
        for n, step in enumerate(STEPS):
            expect(steps.nth(n)).to_be_visible()
            cells = [step.label, step.app, step.tool, step.error.type if step.error else "ok", f"{step.ms:.1f}"]
            expect(steps.nth(n).locator("td")).to_have_text(cells)
        shot(page, "history-run-unfolded")
        # a step whose run is not recorded yet is listed on its own, naming its run
        lone = page.locator("#call-run-2-0")
        expect(lone.locator("xpath=following-sibling::tr[1]")).to_contain_text("of run run-2, not recorded")
        # a hostile step label is text
        page.locator("#call-run-x").locator("xpath=following-sibling::tr[1]").locator("summary").click()
        expect(page.locator("#call-run-x").locator("xpath=following-sibling::tr[1]")).to_contain_text(SCRIPT)
        assert page.locator("main img").count() == 0

        steps.nth(3).get_by_role("link", name="lower").click()
        expect(page.locator("h1")).to_contain_text("run-1-3")
        expect(page.locator("#step")).to_have_text("lower")
        page.locator("#run").get_by_role("link", name=f"{RUN_APP}:morning").click()
        expect(page.locator("h1")).to_contain_text("run-1")
        expect(page.locator("dl.facts")).to_contain_text(f"{RUN_APP} (a run of a plan or workflow)")
        assert page.locator("dl.facts").get_by_role("link", name=RUN_APP).count() == 0
        listed = page.locator("#steps tbody tr")
        expect(listed).to_have_count(len(STEPS))
        expect(listed.nth(4)).to_contain_text("dev.aai.notes")
        shot(page, "history-run-page")
        listed.nth(4).get_by_role("link", name=STEPS[4].label).click()
        expect(page.locator("#step")).to_have_text(STEPS[4].label)
        expect(page.locator("h1")).to_contain_text("run-1-4")

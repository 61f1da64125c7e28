"""The web UI in Debian's Chromium (Playwright, no downloaded browser) against the installed gateway:
log in with the printed token, see the apps, approve a call held for consent and see it in the history,
rescan after adding a descriptor. Screenshots go to test-artifacts/ui/."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from mcp import MCPError
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.e2e.mcp_client import http_session, text_of, web_gateway
from tests.support import ROOT, TEST_APPS, Bus, install_descriptor
from tests.web.ui_support import HOSTILE, SCRIPT, XSS_APP, hostile_descriptor

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts" / "ui"
CALLER = "browser-test-agent"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (/usr/bin/chromium)"),
]


@pytest.fixture
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            yield launched
        finally:
            launched.close()


def login_url(stderr: Path) -> str:
    lines = [line for line in stderr.read_text().splitlines() if "web UI at " in line]
    assert len(lines) == 1, stderr.read_text()
    return lines[0].split(" at ", 1)[1].strip()


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def call_echo(mcp_url: str, text: str, pool: ThreadPoolExecutor) -> Future[str | int]:
    """One aai:exec of the echo app by a client that cannot be asked, in another thread (Playwright's
    sync API keeps an event loop in this one): its text, or the error code."""

    async def run() -> str | int:
        async with http_session(mcp_url, consent=None) as session:
            args = {"app": "dev.aai.echo", "tool": "echo", "args": {"text": text}}
            try:
                result = await session.call_tool("aai_exec", args)
            except MCPError as exc:
                return exc.error.code
            return text_of(result)

    return pool.submit(anyio.run, run)


def test_log_in_approve_a_held_call_see_it_in_history_and_rescan(
    bus: Bus, echo_app: None, tmp_path: Path, browser: Browser
) -> None:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "ask", "waitSeconds": 60}}))
    env = bus.env(HOME=str(home), AAI_PLATFORM="linux")
    stderr = tmp_path / "stderr.log"
    with web_gateway(env, stderr) as mcp_url, ThreadPoolExecutor(1) as pool:
        url = login_url(stderr)
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        page.on("dialog", lambda dialog: pytest.fail(f"a script ran in the page: {dialog.message}"))

        page.goto(url)
        expect(page.locator("h1")).to_have_text("Overview")
        assert "token=" not in page.url
        expect(page.locator("#apps-count")).to_have_text("1")
        page.get_by_role("link", name="Apps", exact=True).click()
        expect(page.locator(".apps")).to_contain_text("dev.aai.echo")

        # A client without elicitation: its call is held until someone decides on the consent page.
        held = call_echo(mcp_url, "held", pool)
        page.goto(url.split("/login")[0] + "/consent")
        pending = page.locator("section.pending")
        expect(pending).to_contain_text("dev.aai.echo:echo")
        shot(page, "consent")
        pending.locator('button[data-answer="tool"]').click()
        expect(page.locator("#consent-result")).to_contain_text("Allowed")
        expect(page.locator("#no-pending")).to_be_visible()
        assert held.result(60) == "held"
        assert call_echo(mcp_url, "again", pool).result(60) == "again"

        page.get_by_role("link", name="History").click()
        rows = page.locator("table.calls tbody tr")
        expect(rows.first).to_contain_text("echo")
        expect(rows.nth(1)).to_contain_text("ok")
        rows.nth(1).locator("a").click()
        expect(page.locator("pre").first).to_contain_text('"text": "held"')
        shot(page, "call")

        # A new descriptor, hostile text and all, appears after a rescan and runs no script.
        hostile = home / ".aai" / XSS_APP
        hostile.mkdir()
        (hostile / "aai.json").write_text(json.dumps(hostile_descriptor()))
        page.get_by_role("link", name="Settings").click()
        page.locator("#rescan").click()
        expect(page.locator("#rescan-result")).to_contain_text("Rescanned")
        page.get_by_role("link", name="Apps", exact=True).click()
        expect(page.locator(".apps")).to_contain_text(XSS_APP)
        page.get_by_role("link", name=f"Evil {HOSTILE}").click()
        expect(page.locator("h1")).to_have_text(f"Evil {HOSTILE}")
        assert page.locator("img").count() == 0
        assert SCRIPT in page.locator("main").inner_text()
        shot(page, "hostile-app")

        page.get_by_role("link", name="Overview").click()
        expect(page.locator("#apps-count")).to_have_text("2")
        shot(page, "overview")
        page.set_viewport_size({"width": 390, "height": 844})
        shot(page, "overview-phone")


def test_without_the_token_the_browser_sees_the_login_page(tmp_path: Path, browser: Browser) -> None:
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True)
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": os.environ.get("PATH", "")}
    stderr = tmp_path / "stderr.log"
    with web_gateway(env, stderr):
        url = login_url(stderr)
        page = browser.new_page()
        answer = page.goto(url.split("/login")[0] + "/apps")
        assert answer is not None
        assert answer.status == 401
        expect(page.locator("main")).to_contain_text(str(home / ".aai" / "web-token"))
        page.locator("#token").fill("not-the-token")
        page.get_by_role("button", name="Log in").click()
        expect(page.locator("[role=alert]")).to_contain_text("not valid")
        page.locator("#token").fill((home / ".aai" / "web-token").read_text().strip())
        page.get_by_role("button", name="Log in").click()
        expect(page.locator("h1")).to_have_text("Overview")
        shutil.rmtree(home / ".aai" / "logs", ignore_errors=True)

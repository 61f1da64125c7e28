"""The Library page in Debian's Chromium against the installed `aai-gateway --web`: search, see
"update available" on an installed older copy, press Update, and install an entry with its button."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from aai_gateway.library.entries import bundled
from tests.e2e.mcp_client import web_gateway
from tests.library.test_store import cli, home_with
from tests.web.test_browser import CHROMIUM, browser, login_url, shot

__all__ = ["browser"]
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (/usr/bin/chromium)"),
]

HOSTNAME = "org.freedesktop.hostname1"
DBUS = "org.freedesktop.dbus"


def test_search_update_and_install_from_the_library_page(tmp_path: Path, browser: Browser) -> None:
    env = home_with(tmp_path, [])
    aai = Path(env["HOME"]) / ".aai"
    entry = bundled().get(HOSTNAME)
    assert entry is not None
    assert entry.data is not None
    older = json.loads(entry.data) | {"version": "0.9.0"}
    older["tools"] = older["tools"][:-1]
    (tmp_path / "old.json").write_text(json.dumps(older))
    assert cli(env, "install", str(tmp_path / "old.json")).returncode == 0
    stderr = tmp_path / "stderr.log"
    with web_gateway(env, stderr):
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        page.on("dialog", lambda dialog: pytest.fail(f"a script ran in the page: {dialog.message}"))
        page.goto(login_url(stderr))
        page.get_by_role("link", name="Library").click()
        expect(page.locator("h1")).to_have_text("Library")
        page.locator('input[name="q"]').fill("Rechnername")
        page.get_by_role("button", name="Search").click()
        hostname = page.locator(f'[id="entry-{HOSTNAME}"]')
        expect(hostname).to_contain_text(f"update available: 0.9.0 → {entry.version}")
        shot(page, "library-update")
        hostname.locator(f'button[data-update="{HOSTNAME}"]').click()
        result = page.locator("#library-result")
        expect(result).to_contain_text(f"{HOSTNAME} was updated from 0.9.0 to {entry.version}")
        expect(result).to_contain_text("added: set_static_hostname")
        assert json.loads((aai / HOSTNAME / "aai.json").read_text())["version"] == entry.version

        page.get_by_role("link", name="Library").click()
        page.locator('select[name="category"]').select_option("System")
        page.get_by_role("button", name="Search").click()
        page.locator(f'button[data-install="{DBUS}"]').click()
        expect(page.locator("#library-result")).to_contain_text(f"Session message bus ({DBUS}) was installed")
        assert (aai / DBUS / "aai.json").is_file()
        expect(page.locator(f'[id="entry-{DBUS}"]')).to_contain_text("installed;")
        shot(page, "library-installed")

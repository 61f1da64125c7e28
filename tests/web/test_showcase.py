"""The store's showcase (`library --publish DIR`) in Debian's Chromium, served over loopback HTTP: the
pages render, their links lead where they say, nothing runs (no script, no handler, a CSP meta), and a
store's hostile text is shown as text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from html import unescape
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Dialog, Page, expect

from aai_gateway.library import showcase
from aai_gateway.library.entries import Rating, bundled
from tests.library.test_store import cli, home_with, served
from tests.web.test_browser import CHROMIUM, browser, shot
from tests.web.ui_support import HOSTILE, SCRIPT

__all__ = ["browser"]
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (/usr/bin/chromium)"),
]

DBUS = "org.freedesktop.dbus"
HANDLER = re.compile(r"<[^>]*\son[a-z]+\s*=", re.IGNORECASE)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    root = tmp_path / "store"
    root.mkdir()
    with served(root) as base:
        yield root, base


def no_script_runs(page: Page, dialogs: list[Dialog]) -> None:
    assert page.evaluate("document.scripts.length") == 0
    assert dialogs == []


def test_the_published_showcase_renders_links_and_runs_nothing(
    tmp_path: Path, store: tuple[Path, str], browser: Browser
) -> None:
    root, base = store
    done = cli(home_with(tmp_path, []), "library", "--publish", str(root), "--name", "Team store")
    assert done.returncode == 0, done.stderr
    assert f"showcase of {len(bundled().entries) + 1} pages ({root / 'index.html'})" in done.stderr
    pages = sorted(root.rglob("*.html"))
    assert len(pages) == len(bundled().entries) + 1
    for page_file in pages:
        text = page_file.read_text("utf-8")
        assert "<script" not in text.lower(), page_file
        assert not HANDLER.search(text), page_file
        csp = f'<meta http-equiv="Content-Security-Policy" content="{showcase.CSP}">'
        assert csp in unescape(text), page_file

    page = browser.new_page()
    dialogs: list[Dialog] = []
    page.on("dialog", lambda d: dialogs.append(d))  # noqa: PLW0108 - Playwright cannot wrap a bound builtin
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.goto(f"{base}/index.html")
    expect(page.locator("h1")).to_have_text("Team store")
    expect(page.locator("section#system h2")).to_have_text("System")
    expect(page.locator("section#media")).to_contain_text("Media player org.mpris.mediaplayer2")
    no_script_runs(page, dialogs)
    shot(page, "showcase-index")

    page.locator(f'a[href="apps/{DBUS}/index.html"]').click()
    expect(page.locator("h1")).to_have_text("Session message bus")
    expect(page.locator("pre.install")).to_have_text(f"aai-gateway install {DBUS}")
    expect(page.locator("#tool-list_names")).to_contain_text("read-only")
    expect(page.locator("#tool-get_name_owner")).to_contain_text("name (string, required)")
    expect(page.locator("dl.verified")).to_contain_text("run: the test suite ran the real app")
    expect(page.locator('li[lang="de"]')).to_contain_text("Sitzungs-Nachrichtenbus")
    no_script_runs(page, dialogs)
    shot(page, "showcase-entry")

    descriptor = page.request.get(f"{base}/apps/{DBUS}/aai.json")
    assert descriptor.ok
    assert descriptor.body() == (root / "apps" / DBUS / "aai.json").read_bytes()
    page.locator("a", has_text="System").first.click()
    assert page.url == f"{base}/index.html#system"
    page.locator("a", has_text="index.json").click()
    assert page.url == f"{base}/index.json"
    assert failed == []


@pytest.mark.hostile("store")
def test_hostile_text_in_an_entry_is_shown_as_text(store: tuple[Path, str], browser: Browser) -> None:
    root, base = store
    entry = bundled().get(DBUS)
    assert entry is not None
    hostile = replace(
        entry,
        description=f"Describes {HOSTILE}",
        why=HOSTILE,
        category=f"Evil {SCRIPT}",
        rating=Rating(4.5, 2),
        reviews_url='https://reviews.example/?q="><script>alert(3)</script>',
    )
    showcase.write([hostile], root, f"Store {HOSTILE}")
    for page_file in root.rglob("*.html"):
        text = page_file.read_text("utf-8")
        assert "<script" not in text.lower()
        assert not HANDLER.search(text)

    page = browser.new_page()
    dialogs: list[Dialog] = []
    page.on("dialog", lambda d: dialogs.append(d))  # noqa: PLW0108 - Playwright cannot wrap a bound builtin
    page.goto(f"{base}/apps/{DBUS}/index.html")
    expect(page.locator("h1")).to_have_text("Session message bus")
    expect(page.locator("main")).to_contain_text(f"Describes {HOSTILE}")
    expect(page.locator("header")).to_contain_text(f"Store {HOSTILE}")
    expect(page.locator("main")).to_contain_text("rated 4.5 of 5 by 2 people")
    no_script_runs(page, dialogs)
    page.goto(f"{base}/index.html")
    expect(page.locator("main")).to_contain_text(f"Evil {SCRIPT}")
    no_script_runs(page, dialogs)

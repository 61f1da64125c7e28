"""The Library page: search and browse by category, "update available" with an Update button behind the
session, CSRF and Origin checks, an MCP server's program shown before it is installed, ratings and the
success of recent calls. The store is served over loopback HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from aai_gateway.library.entries import bundled
from aai_gateway.library.install import install
from aai_gateway.library.store import publish
from aai_gateway.web import UI_PATH
from tests.library.test_listing import record
from tests.library.test_store import add_entry, served
from tests.mcpservers.servers import descriptor
from tests.web.ui_support import ORIGIN, Ui, make_ui

DBUS = "org.freedesktop.dbus"
SERVER = "dev.aai.demoserver"
LIBRARY = f"{UI_PATH}/library"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("store")
    publish([], root, "page store")
    entry = bundled().get(DBUS)
    assert entry is not None
    assert entry.data is not None
    newer = json.loads(entry.data)
    newer["version"] = "2.0.0"
    newer["tools"] = newer["tools"][:-1]  # start_service gone
    add_entry(root, DBUS, json.dumps(newer).encode(), version="2.0.0")
    execution = {
        "type": "mcp",
        "command": "/usr/bin/demo-server",
        "args": ["--stdio", "--root", "/srv/data"],
        "env": {"MODE": "demo", "TOKEN": {"$env": "DEMO_TOKEN"}, "API_KEY": "sk-written-in-the-file"},
    }
    add_entry(root, SERVER, json.dumps(descriptor(SERVER, execution)).encode())
    doc = json.loads((root / "index.json").read_text())
    for listed in doc["entries"]:
        if listed["id"] == SERVER:
            listed |= {"rating": {"average": 3.5, "count": 4}, "reviewsUrl": "https://reviews.example/demo"}
    (root / "index.json").write_text(json.dumps(doc))
    with served(root) as base:
        yield f"{base}/index.json"


@pytest.fixture
def ui(tmp_path: Path, store: str) -> Iterator[Ui]:
    aai = tmp_path / ".aai"
    aai.mkdir()
    (aai / "config.json").write_text(json.dumps({"storeUrls": [store], "web": {"allowHttpLoopback": True}}))
    yield from make_ui(tmp_path)


def text(answer: object) -> str:
    return unescape(getattr(answer, "text", ""))


def test_search_and_categories(ui: Ui) -> None:
    ui.login()
    page = text(ui.client.get(LIBRARY))
    assert '<h2 id="category-system">System</h2>' in page
    assert f'id="entry-{DBUS}"' in page
    assert f'data-install="{DBUS}"' in page
    found = text(ui.client.get(LIBRARY, params={"q": "Rechnername"}))
    assert 'id="entry-org.freedesktop.hostname1"' in found
    assert f'id="entry-{DBUS}"' not in found
    media = text(ui.client.get(LIBRARY, params={"category": "Media"}))
    assert 'id="entry-org.mpris.mediaplayer2"' in media
    assert f'id="entry-{DBUS}"' not in media
    nothing = text(ui.client.get(LIBRARY, params={"q": "zzqqxx"}))
    assert "No entry matches “zzqqxx”." in nothing


def test_update_available_and_the_update_button_behind_the_checks(ui: Ui) -> None:
    aai = ui.gateway.settings.aai_home
    entry = bundled().get(DBUS)
    assert entry is not None
    assert entry.data is not None
    install(entry.data, "the library", aai)  # what an older package installed
    ui.gateway.history.submit(record(1, "list_names", ok=True)).result(10)
    ui.gateway.history.submit(record(2, "list_names", ok=False)).result(10)
    csrf = ui.login()
    page = text(ui.client.get(LIBRARY, params={"q": "dbus"}))
    assert "update available: 1.0.0 → 2.0.0" in page
    assert f'data-update="{DBUS}"' in page
    assert f'href="{UI_PATH}/apps/{DBUS}"' in page
    assert "ran 1 of 2 times in 30 days" in page

    target = aai / DBUS / "aai.json"
    assert ui.client.post(f"{LIBRARY}/update", data={"app": DBUS}).status_code == 403
    foreign = ui.client.post(
        f"{LIBRARY}/update", data={"app": DBUS, "csrf": csrf}, headers={"origin": "http://evil.example"}
    )
    assert foreign.status_code == 403
    assert json.loads(target.read_text())["version"] == "1.0.0"

    done = ui.client.post(f"{LIBRARY}/update", data={"app": DBUS, "csrf": csrf}, headers={"origin": ORIGIN})
    assert done.status_code == 200, done.text
    said = text(done)
    assert f"{DBUS} was updated from 1.0.0 to 2.0.0: {target}" in said
    assert "removed: start_service" in said
    assert f'data-update="{DBUS}"' not in said
    assert json.loads(target.read_text())["version"] == "2.0.0"
    again = ui.client.post(f"{LIBRARY}/update", data={"app": DBUS, "csrf": csrf})
    assert again.status_code == 404


def test_an_mcp_server_shows_its_program_before_it_is_installed(ui: Ui) -> None:
    csrf = ui.login()
    page = text(ui.client.get(LIBRARY, params={"q": "demoserver"}))
    assert "rated 3.5 of 5 by 4 people" in page
    assert '<a href="https://reviews.example/demo" rel="nofollow noopener noreferrer">reviews</a>' in page
    target = ui.gateway.settings.aai_home / SERVER / "aai.json"

    asked = ui.client.post(f"{LIBRARY}/install?from=library", data={"app": SERVER, "csrf": csrf})
    assert asked.status_code == 200, asked.text
    review = text(asked)
    assert "is an MCP server. Installing it lets the gateway start it:" in review
    assert "Starts the program <code>/usr/bin/demo-server</code> with the arguments <code>--stdio</code>, " in review
    assert "<code>MODE</code>: demo" in review
    assert "<code>TOKEN</code>: $env:DEMO_TOKEN" in review
    assert "<code>API_KEY</code>: [redacted]" in review  # masked as the approval question masks it
    assert "sk-written-in-the-file" not in review
    assert not target.exists()

    wrong = ui.client.post(f"{LIBRARY}/install?from=library", data={"app": SERVER, "csrf": csrf, "confirm": "0" * 64})
    assert "is an MCP server" in text(wrong)
    assert not target.exists()
    digest = review.split('name="confirm" value="', 1)[1].split('"', 1)[0]
    done = ui.client.post(f"{LIBRARY}/install?from=library", data={"app": SERVER, "csrf": csrf, "confirm": digest})
    assert done.status_code == 200, done.text
    assert f"({SERVER}) was installed: {target}" in text(done)
    assert target.is_file()


def test_updating_an_mcp_server_shows_what_it_now_runs(ui: Ui, store: str) -> None:
    aai = ui.gateway.settings.aai_home
    older = descriptor(SERVER, {"type": "mcp", "command": "/usr/bin/demo-server", "args": ["--old"]})
    older["version"] = "0.9.0"
    install(json.dumps(older).encode(), store, aai)  # from the store, an earlier version
    csrf = ui.login()
    done = ui.client.post(f"{LIBRARY}/update", data={"app": SERVER, "csrf": csrf}, headers={"origin": ORIGIN})
    assert done.status_code == 200, done.text
    said = text(done)
    assert f"{SERVER} was updated from 0.9.0 to 1.0.0" in said
    assert "arguments: --stdio --root /srv/data" in said
    assert f"aai-gateway consent allow-server {SERVER}" in said


def test_an_app_that_cannot_run_here_says_why_once(ui: Ui, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/aai-test-system-bus")
    ui.login()
    page = text(ui.client.get(LIBRARY, params={"q": "Rechnername"}))
    entry = page[page.index('id="entry-org.freedesktop.hostname1"') :]
    assert "not installed; cannot run here: its system bus cannot be reached" in entry
    assert page.count("/nonexistent/aai-test-system-bus") == 1
    assert '<p class="warning bus-problem">1 entry cannot run here: the system bus could not be asked: ' in page
    apps = text(ui.client.get(f"{UI_PATH}/apps"))
    assert "cannot run here: its system bus cannot be reached" in apps


def test_the_apps_page_points_an_outdated_app_at_its_update(ui: Ui) -> None:
    entry = bundled().get(DBUS)
    assert entry is not None
    assert entry.data is not None
    install(entry.data, "the library", ui.gateway.settings.aai_home)
    ui.gateway.rescan()
    ui.login()
    page = text(ui.client.get(f"{UI_PATH}/apps"))
    link = f'data-update-available="{DBUS}" href="{LIBRARY}?q={DBUS}#entry-{DBUS}">'
    assert f"{link}update available: 1.0.0 → 2.0.0" in page

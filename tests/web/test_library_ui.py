"""The Apps page offers library entries not installed; its Install button works behind the UI's checks."""

from __future__ import annotations

from html import unescape

from aai_gateway.web import UI_PATH
from tests.web.ui_support import ORIGIN, Ui

APP = "org.freedesktop.dbus"


def test_the_apps_page_installs_a_library_entry_behind_csrf_and_origin_checks(ui: Ui) -> None:
    csrf = ui.login()
    target = ui.gateway.settings.aai_home / APP / "aai.json"
    page = unescape(ui.client.get(f"{UI_PATH}/apps").text)
    assert f'id="library-{APP}"' in page
    assert f'data-install="{APP}"' in page
    assert "verified: run" in page

    assert ui.client.post(f"{UI_PATH}/library/install", data={"app": APP}).status_code == 403
    foreign = ui.client.post(
        f"{UI_PATH}/library/install", data={"app": APP, "csrf": csrf}, headers={"origin": "http://evil.example"}
    )
    assert foreign.status_code == 403
    assert not target.exists()

    done = ui.client.post(f"{UI_PATH}/library/install", data={"app": APP, "csrf": csrf}, headers={"origin": ORIGIN})
    assert done.status_code == 200, done.text
    text = unescape(done.text)
    assert f"Session message bus ({APP}) was installed: {target}" in text
    assert "An agent can now use Session message bus (8 tools):" in text
    assert '8 ask the user first (consent.default "ask" of the config)' in text
    assert target.is_file()
    assert f'href="{UI_PATH}/apps/{APP}"' in text  # served now, after the rescan
    assert f'id="library-{APP}"' not in text

    again = unescape(ui.client.post(f"{UI_PATH}/library/install", data={"app": APP, "csrf": csrf}).text)
    assert f"Session message bus ({APP}) is already installed: {target}" in again


def test_only_library_ids_are_installed_from_the_ui(ui: Ui) -> None:
    csrf = ui.login()
    for given in ("org.example.nothing", "/etc/passwd", "https://example.com/aai.json"):
        answer = ui.client.post(f"{UI_PATH}/library/install", data={"app": given, "csrf": csrf})
        assert answer.status_code == 404
        assert "Choose an app of the library to install." in answer.text
    assert sorted(p.name for p in ui.gateway.settings.aai_home.iterdir() if p.is_dir()) == [
        "dev.aai.broken",
        "dev.aai.xss",
    ]

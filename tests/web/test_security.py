"""The UI's guard, without a browser: token, cookie, Host, Origin, CSRF, headers, escaping."""

from __future__ import annotations

import stat

import pytest

from aai_gateway.web import UI_PATH
from aai_gateway.web.security import COOKIE
from tests.web.ui_support import BROKEN_APP, HOSTILE, IMG, ORIGIN, PORT, SCRIPT, XSS_APP, Ui

PAGES = [
    "/",
    "/apps",
    f"/apps/{XSS_APP}",
    f"/apps/{BROKEN_APP}",
    "/history",
    "/history/abc123def456",
    "/settings",
    "/consent",
    "/insights",
    "/workflows",
]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_needs_a_session(ui: Ui, path: str) -> None:
    answer = ui.client.get(UI_PATH + path)
    assert answer.status_code == 401
    assert "Log in" in answer.text
    assert str(ui.token_file) in answer.text
    assert HOSTILE not in answer.text


def test_a_wrong_or_forged_cookie_is_refused(ui: Ui) -> None:
    ui.client.cookies.set(COOKIE, "made-up", path=UI_PATH)
    assert ui.client.get(f"{UI_PATH}/apps").status_code == 401


def test_a_wrong_token_is_refused(ui: Ui) -> None:
    answer = ui.client.get(f"{UI_PATH}/login", params={"token": ui.access.token + "x"}, follow_redirects=False)
    assert answer.status_code == 401
    assert COOKIE not in answer.headers.get("set-cookie", "")
    assert ui.client.get(f"{UI_PATH}/apps").status_code == 401


def test_the_token_logs_in_once_and_the_file_then_holds_a_new_one(ui: Ui) -> None:
    token = ui.access.token
    assert ui.token_file.read_text().strip() == token
    assert stat.S_IMODE(ui.token_file.stat().st_mode) == 0o600
    answer = ui.client.get(f"{UI_PATH}/login", params={"token": token}, follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == f"{UI_PATH}/"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    for part in ("HttpOnly", "SameSite=strict", f"Path={UI_PATH}"):
        assert part.lower() in cookie.lower()
    assert token not in cookie
    assert ui.client.get(f"{UI_PATH}/apps").status_code == 200

    other = ui.client.get(f"{UI_PATH}/login", params={"token": token}, follow_redirects=False)
    assert other.status_code == 401
    fresh = ui.token_file.read_text().strip()
    assert fresh != token
    assert stat.S_IMODE(ui.token_file.stat().st_mode) == 0o600
    by_form = ui.client.post(f"{UI_PATH}/login", data={"token": fresh}, follow_redirects=False)
    assert by_form.status_code == 303


def test_logout_ends_the_session(ui: Ui) -> None:
    csrf = ui.login()
    assert ui.client.post(f"{UI_PATH}/logout", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    assert ui.client.get(f"{UI_PATH}/apps").status_code == 401


@pytest.mark.parametrize(
    "host", ["evil.example", f"evil.example:{PORT}", "127.0.0.1", f"127.0.0.1:{PORT + 1}", f"localhost.evil:{PORT}", ""]
)
def test_a_foreign_host_is_refused(ui: Ui, host: str) -> None:
    ui.login()
    answer = ui.client.get(f"{UI_PATH}/apps", headers={"host": host})
    assert answer.status_code == 421
    assert HOSTILE not in answer.text


@pytest.mark.parametrize("host", [f"localhost:{PORT}", f"[::1]:{PORT}", f"127.0.0.1:{PORT}"])
def test_loopback_names_on_the_port_are_accepted(ui: Ui, host: str) -> None:
    ui.login()
    assert ui.client.get(f"{UI_PATH}/apps", headers={"host": host}).status_code == 200


@pytest.mark.parametrize(
    "origin", ["http://evil.example", f"http://evil.example:{PORT}", "null", f"https://127.0.0.1:{PORT}"]
)
def test_a_foreign_origin_is_refused(ui: Ui, origin: str) -> None:
    csrf = ui.login()
    answer = ui.client.post(f"{UI_PATH}/rescan", data={"csrf": csrf}, headers={"origin": origin})
    assert answer.status_code == 403
    assert ui.client.get(f"{UI_PATH}/apps", headers={"origin": origin}).status_code == 403


@pytest.mark.parametrize("site", ["cross-site", "same-site", None])
def test_an_opaque_origin_passes_only_when_the_browser_says_same_origin(ui: Ui, site: str | None) -> None:
    csrf = ui.login()
    headers = {"origin": "null"} | ({"sec-fetch-site": site} if site else {})
    assert ui.client.post(f"{UI_PATH}/rescan", data={"csrf": csrf}, headers=headers).status_code == 403
    same = {"origin": "null", "sec-fetch-site": "same-origin"}
    assert ui.client.post(f"{UI_PATH}/rescan", data={"csrf": csrf}, headers=same).status_code == 200


def test_a_post_from_the_ui_itself_passes(ui: Ui) -> None:
    csrf = ui.login()
    answer = ui.client.post(f"{UI_PATH}/rescan", data={"csrf": csrf}, headers={"origin": ORIGIN})
    assert answer.status_code == 200
    assert "nothing changed" in answer.text


@pytest.mark.parametrize("data", [{}, {"csrf": ""}, {"csrf": "wrong"}, {"csrf": ["a", "b"]}, {"other": "x"}], ids=repr)
def test_a_post_without_the_right_csrf_token_is_refused(ui: Ui, data: dict[str, object]) -> None:
    ui.login()
    assert ui.client.post(f"{UI_PATH}/rescan", data=data).status_code == 403
    assert ui.client.post(f"{UI_PATH}/logout", data=data).status_code == 403


def test_the_csrf_token_must_come_as_a_form_field(ui: Ui) -> None:
    csrf = ui.login()
    assert ui.client.post(f"{UI_PATH}/rescan", json={"csrf": csrf}).status_code == 403
    assert ui.client.post(f"{UI_PATH}/rescan", params={"csrf": csrf}).status_code == 403


def test_a_csrf_token_of_another_session_is_refused(ui: Ui) -> None:
    theirs = ui.login()
    ui.client.cookies.clear()
    ui.login()
    assert ui.client.post(f"{UI_PATH}/rescan", data={"csrf": theirs}).status_code == 403


def test_other_methods_are_refused(ui: Ui) -> None:
    ui.login()
    assert ui.client.put(f"{UI_PATH}/rescan").status_code == 405
    assert ui.client.delete(f"{UI_PATH}/apps").status_code == 405


@pytest.mark.parametrize("path", ["/", "/login", "/apps", "/static/ui.css", "/nowhere"])
def test_security_headers_on_every_answer(ui: Ui, path: str) -> None:
    ui.login()
    answer = ui.client.get(UI_PATH + path)
    headers = answer.headers
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["x-content-type-options"] == "nosniff"


def test_refusals_carry_the_headers_too(ui: Ui) -> None:
    answer = ui.client.get(f"{UI_PATH}/apps", headers={"host": "evil.example"})
    assert answer.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("path", PAGES)
def test_hostile_text_is_escaped_on_every_page(ui: Ui, path: str) -> None:
    ui.login()
    answer = ui.client.get(UI_PATH + path)
    assert answer.status_code == 200, answer.text
    page = answer.text
    assert SCRIPT not in page
    assert "<img" not in page
    assert "onerror=alert" not in page or "&lt;img src=x onerror=alert(2)&gt;" in page
    assert page.count("<script") == page.count('<script src="/ui/static/ui.js" defer></script>')


def test_the_hostile_text_is_shown_escaped(ui: Ui) -> None:
    ui.login()
    page = ui.client.get(f"{UI_PATH}/apps/{XSS_APP}").text
    assert "Evil &lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in page
    assert IMG not in page


def test_a_pending_request_is_decided_and_the_decision_revoked(ui: Ui) -> None:
    csrf = ui.login()
    (request,) = ui.gateway.consent.store.pending()
    assert (
        ui.client.post(f"{UI_PATH}/consent/decide", data={"request": request.id, "answer": "tool"}).status_code == 403
    )
    answer = ui.client.post(f"{UI_PATH}/consent/decide", data={"csrf": csrf, "request": request.id, "answer": "tool"})
    assert answer.status_code == 200
    assert "Allowed" in answer.text
    assert ui.gateway.consent.store.pending() == ()
    (grant,) = ui.gateway.consent.store.decisions()
    assert (grant.app, grant.tool, grant.decision) == (XSS_APP, "echo", "allow")
    again = ui.client.post(f"{UI_PATH}/consent/decide", data={"csrf": csrf, "request": request.id, "answer": "tool"})
    assert again.status_code == 404
    revoked = ui.client.post(f"{UI_PATH}/consent/revoke", data={"csrf": csrf, "grant": grant.id})
    assert revoked.status_code == 200
    assert ui.gateway.consent.store.decisions() == ()


@pytest.mark.parametrize("data", [{}, {"request": "x"}, {"request": "x", "answer": "maybe"}, {"answer": "once"}])
def test_a_malformed_decision_is_a_clear_refusal(ui: Ui, data: dict[str, str]) -> None:
    csrf = ui.login()
    answer = ui.client.post(f"{UI_PATH}/consent/decide", data={"csrf": csrf, **data})
    assert answer.status_code in (400, 404)

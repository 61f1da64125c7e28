"""Whatever a logged-in browser sends to the UI's pages and forms, the answer is a page, never a crash."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aai_gateway.web import UI_PATH
from tests.web.ui_support import Ui

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
FILTERS = st.dictionaries(
    st.sampled_from(["app", "tool", "status", "caller", "since", "until", "page", "offset", "limit", "x"]),
    st.one_of(TEXT, st.sampled_from(["ok", "error", "30m", "2h", "7d", "2026-01-01T00:00:00Z", "-1", "9" * 30])),
)
FIELDS = st.dictionaries(
    st.sampled_from(["id", "answer", "app", "tool", "caller", "scope", "x"]),
    st.one_of(TEXT, st.sampled_from(["once", "tool", "app", "deny", "never", ""])),
)


def session(ui: Ui) -> str:
    """The CSRF token of a logged-in session, logging in first if needed (examples share the client)."""
    return ui.login() if ui.client.get(f"{UI_PATH}/settings").status_code == 401 else ui.csrf()


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(params=FILTERS)
def test_history_filters_never_crash(ui: Ui, params: dict[str, Any]) -> None:
    session(ui)
    answer = ui.client.get(f"{UI_PATH}/history", params=params)
    assert answer.status_code in (200, 400), answer.text


@FUZZ
@given(path=TEXT)
def test_any_app_or_call_path_is_a_page(ui: Ui, path: str) -> None:
    session(ui)
    for base in ("apps", "history"):
        answer = ui.client.get(f"{UI_PATH}/{base}/{quote(path, safe='')}")
        assert answer.status_code < 500, answer.text


@FUZZ
@given(action=st.sampled_from(["consent/decide", "consent/revoke", "rescan"]), fields=FIELDS)
def test_forms_with_any_fields_never_crash(ui: Ui, action: str, fields: dict[str, Any]) -> None:
    csrf = session(ui)
    answer = ui.client.post(f"{UI_PATH}/{action}", data={**fields, "csrf": csrf}, follow_redirects=False)
    assert answer.status_code < 500, answer.text

"""What the UI's pages say, through the Starlette test client: descriptor warnings, the settings table."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from aai_gateway.config import load_settings, setting_fields
from aai_gateway.history import HistoryUnavailable, Record
from aai_gateway.service import Gateway
from aai_gateway.web import TOKEN_FILE, UI_PATH, Access, build_ui
from tests.support import TEST_APPS
from tests.web.ui_support import HOST, HOSTILE, PORT, SCRIPT, XSS_APP, Ui, hostile_record, write_home


def test_the_apps_page_lists_an_unknown_key_as_a_warning(ui: Ui) -> None:
    doc = json.loads((TEST_APPS / "io.mpv" / "aai.json").read_text())
    doc["platforms"]["linux"]["tools"][0]["timeut"] = 5
    target = ui.gateway.settings.scan_paths[0] / "io.mpv" / "aai.json"
    target.parent.mkdir()
    target.write_text(json.dumps(doc))
    assert "io.mpv" in ui.gateway.rescan()
    ui.login()
    page = unescape(ui.client.get(f"{UI_PATH}/apps").text)
    assert "1 warning" in page
    assert f"{target}#/platforms/linux/tools/0/timeut</code>: unknown key 'timeut' (did you mean 'timeout'?)" in page
    app = unescape(ui.client.get(f"{UI_PATH}/apps/io.mpv").text)
    assert "unknown key 'timeut' (did you mean 'timeout'?)" in app


def settings_table(page: str) -> dict[str, tuple[str, str]]:
    """The settings page's configuration table: key → (value, source), as a person reads them."""
    rows = re.findall(r"<tr><td><code>(.*?)</code></td><td><code>(.*?)</code></td><td>(.*?)</td></tr>", page)
    return {unescape(key): (unescape(value), unescape(source)) for key, value, source in rows}


def test_settings_show_config_keys_json_values_and_true_sources(tmp_path: Path) -> None:
    aai = write_home(tmp_path)
    config = aai / "config.json"
    rules = [
        {"caller": "Cursor", "app": "*", "tool": "delete_note", "decision": "deny"},
        {"app": XSS_APP, "decision": "allow"},
    ]
    config.write_text(json.dumps({"consent": {"rules": rules}, "web": {"timeout": 12.5}, "enableWebUI": True}))
    settings = load_settings({"HOME": str(tmp_path), "AAI_PLATFORM": "linux"}).from_option("--port", http_port=PORT)
    gateway = Gateway(settings)
    access = Access(token_file=aai / TOKEN_FILE)
    app = Starlette(routes=[Mount(UI_PATH, app=build_ui(gateway, access, HOST, PORT))])
    try:
        with TestClient(app, base_url=f"http://{HOST}:{PORT}") as client:
            ui = Ui(client, access, gateway, aai / TOKEN_FILE)
            ui.login()
            table = settings_table(client.get(f"{UI_PATH}/settings").text)
    finally:
        gateway.history.close()

    assert set(table) == {*setting_fields(), "AAI home"}
    assert set(table) >= {"enableWebUI", "web.allowHttpLoopback", "consent.default", "consent.waitSeconds"}
    from_file = f"config file {config}"
    assert table["enableWebUI"] == ("true", from_file)
    assert table["consent.rules"] == (json.dumps(rules), from_file)
    assert table["consent.default"] == ('"ask"', "default")
    assert table["web.timeout"] == ("12.5", from_file)
    assert table["web.cacheTtlHours"] == ("24", "default")
    assert table["platform"] == ('"linux"', "environment variable AAI_PLATFORM")
    assert table["httpPort"] == (str(PORT), "command-line option --port")
    assert table["httpHost"] == ('"127.0.0.1"', "default")
    assert table["scanPaths"] == (json.dumps([str(aai)]), "default")
    assert table["AAI home"] == (str(aai), "default")
    for key, (value, _) in table.items():
        if key != "AAI home":
            json.loads(value)


@pytest.mark.hostile("history")
def test_the_overview_shows_a_banner_while_the_history_cannot_be_written(ui: Ui) -> None:
    store = ui.gateway.history
    for suffix in ("", "-wal", "-shm"):
        store.path.with_name(store.path.name + suffix).unlink(missing_ok=True)
    store.path.mkdir()  # a folder where the database should be: it can be neither opened nor read
    with pytest.raises(HistoryUnavailable):
        store.submit(hostile_record("waiting00001")).result(10)
    ui.login()
    page = unescape(ui.client.get(f"{UI_PATH}/").text)
    assert 'id="history-trouble"' in page
    assert "The call history cannot be written" in page
    assert "1 record wait in memory" in page
    assert 'id="history-unreadable"' in page

    store.path.rmdir()
    store.flush(10)
    page = unescape(ui.client.get(f"{UI_PATH}/").text)
    assert 'id="history-trouble"' not in page
    assert "waiting00001" in page


TRIGGER = f"dev.aai.xss:tick where {SCRIPT}"


def triggered_run(call_id: str, status: str, ago: timedelta, trigger: str = TRIGGER) -> Record:
    failed = status == "error"
    return Record(
        call_id=call_id,
        time=datetime.now(UTC) - ago,
        caller="trigger",
        transport="trigger",
        app="aai.workflows",
        tool="watch",
        args={"steps": 1, "inputs": {}, "event": {"trigger": trigger, "payload": {"n": 1}, "heldBack": 0}},
        status="error" if failed else "ok",
        duration_ms=2.0,
        error_code=-32001 if failed else None,
        error_type="AUTOMATION_FAILED" if failed else None,
        error_detail=f"The plan failed: {HOSTILE}" if failed else None,
    )


@pytest.mark.hostile("encoding")
def test_the_overview_shows_a_failing_trigger_escaped_and_only_while_it_fails(ui: Ui) -> None:
    ui.login()
    page = ui.client.get(f"{UI_PATH}/").text
    assert 'id="failing-triggers"' not in page  # a failed call of an agent is no failing trigger

    store = ui.gateway.history
    store.submit(triggered_run("old000000001", "error", timedelta(days=2), "an old trigger")).result(10)
    store.submit(triggered_run("run000000001", "error", timedelta(minutes=3))).result(10)
    store.submit(triggered_run("run000000002", "error", timedelta(minutes=2))).result(10)
    page = ui.client.get(f"{UI_PATH}/").text
    assert SCRIPT not in page
    shown = unescape(page)
    assert f"<code>dev.aai.xss:tick where {SCRIPT}</code>: 2 of 2 runs in the last 24 hours failed" in shown
    assert f'href="{UI_PATH}/history/run000000002"' in shown
    assert f"AUTOMATION_FAILED: The plan failed: {HOSTILE}" in shown
    assert "an old trigger" not in shown

    store.submit(triggered_run("run000000003", "ok", timedelta(minutes=1))).result(10)
    assert 'id="failing-triggers"' not in ui.client.get(f"{UI_PATH}/").text

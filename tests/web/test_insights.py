"""The Insights page and the History page's download, through the Starlette test client: the numbers of a
history written here, the range chooser, SVG that is well-formed and needs nothing the CSP forbids."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from html import unescape

from aai_gateway.history import Record
from aai_gateway.web import UI_PATH
from tests.web.ui_support import HOSTILE, SCRIPT, XSS_APP, Ui


def record(n: int, at: datetime, **changes: object) -> Record:
    fields: dict[str, object] = {
        "call_id": f"ins{n:05d}",
        "time": at,
        "caller": "insight-agent",
        "transport": "stdio",
        "app": "dev.aai.echo",
        "tool": "echo",
        "args": {"text": f"call {n}", "password": "[REDACTED]"},
        "status": "ok",
        "duration_ms": float(n % 10 + 1),
        "result": '"ok"',
    }
    fields.update(changes)
    return Record(**fields)  # type: ignore[arg-type]


def fill(ui: Ui) -> None:
    """40 echo calls over the last two days (4 failing with TIMEOUT, durations 1..10 ms), 2 consent questions."""
    now = datetime.now(UTC)
    for n in range(40):
        changes: dict[str, object] = {}
        if n < 4:
            changes = {"status": "error", "error_code": -32003, "error_type": "TIMEOUT", "error_detail": "slow"}
            changes["result"] = None
        if n in (5, 6):
            changes["consent"] = "once" if n == 5 else "unanswered"
        ui.gateway.history.submit(record(n, now - timedelta(hours=n), **changes))
    ui.gateway.history.flush(30)


def svgs(page: str) -> list[ET.Element]:
    found = re.findall(r"<svg .*?</svg>", page, re.DOTALL)
    return [ET.fromstring(svg) for svg in found]  # noqa: S314 - the gateway's own page


def test_the_page_shows_the_numbers_in_plots_and_tables(ui: Ui) -> None:
    fill(ui)
    ui.login()
    answer = ui.client.get(f"{UI_PATH}/insights", params={"range": "7d"})
    assert answer.status_code == 200, answer.text
    page = answer.text
    assert 'aria-current="page">Insights</a>' in page
    # 40 echo calls and the hostile descriptor's failed call that ui_support wrote
    assert re.search(r'id="insights-calls">41<', page)
    assert re.search(r'id="insights-errors">5<', page)
    assert re.search(r'id="insights-asked">2<', page)
    plots = svgs(page)
    assert [p.get("id") for p in plots] == [
        "plot-usage",
        "plot-app-errors",
        "plot-error-kinds",
        "plot-durations",
        "plot-callers",
        "plot-consent",
    ]
    titles = unescape(" | ".join(t.text or "" for p in plots for t in p.iter("{http://www.w3.org/2000/svg}title")))
    assert "dev.aai.echo: 10.0 % (4 of 40)" in titles
    assert "dev.aai.echo:echo TIMEOUT: 4 calls" in titles
    assert "dev.aai.echo:echo, p50: p50 5.0 ms" in titles
    assert "dev.aai.echo:echo, p95: p95 10.0 ms" in titles
    assert "insight-agent: 40 calls, 4 failed" in titles
    assert "answered: 1" in titles
    assert "<details>" in page
    assert '<td>dev.aai.echo</td><td>echo</td><td>TIMEOUT</td><td class="num">4</td>' in page
    assert 'style="' not in page
    assert SCRIPT not in page
    assert HOSTILE not in page
    assert XSS_APP in page


def test_the_range_chooser(ui: Ui) -> None:
    fill(ui)
    ui.login()
    day = ui.client.get(f"{UI_PATH}/insights", params={"range": "24h"}).text
    assert re.search(r'id="insights-calls">\d+<', day)
    assert "Calls per hour (UTC) and app" in day
    assert '<option value="24h" selected>' in day
    since = (datetime.now(UTC) - timedelta(hours=10, minutes=30)).strftime("%Y-%m-%dT%H:%M")
    custom = ui.client.get(f"{UI_PATH}/insights", params={"range": "custom", "since": since})
    assert custom.status_code == 200
    # hours 0..10 ago and the hostile record: 11 + 1, or 10 + 1 when a call sits on the boundary minute
    assert re.search(r'id="insights-calls">1[12]<', custom.text)
    only = ui.client.get(f"{UI_PATH}/insights", params={"range": "30d", "app": XSS_APP}).text
    assert re.search(r'id="insights-calls">1<', only)
    bad = ui.client.get(f"{UI_PATH}/insights", params={"range": "custom", "since": "yesterday-ish"})
    assert bad.status_code == 400
    assert "since: expected an ISO date or time" in unescape(bad.text)
    wrong = ui.client.get(f"{UI_PATH}/insights", params={"range": "1y"})
    assert wrong.status_code == 400
    assert "range must be one of 24h, 7d, 30d, custom" in wrong.text


def test_the_history_page_offers_its_calls_as_a_download(ui: Ui) -> None:
    fill(ui)
    assert ui.client.get(f"{UI_PATH}/history/export").status_code == 401
    ui.login()
    page = unescape(ui.client.get(f"{UI_PATH}/history", params={"status": "error", "app": "dev.aai.echo"}).text)
    link = re.search(r'id="export-jsonl" href="([^"]+)"', page)
    assert link is not None
    assert link.group(1) == f"{UI_PATH}/history/export?app=dev.aai.echo&status=error&format=jsonl"
    answer = ui.client.get(link.group(1))
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    assert answer.headers["content-disposition"].startswith('attachment; filename="aai-history-')
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    rows = [json.loads(line) for line in answer.text.splitlines()]
    assert [r["id"] for r in rows] == ["ins00000", "ins00001", "ins00002", "ins00003"]  # in the order recorded
    assert {r["args"]["password"] for r in rows} == {"[REDACTED]"}
    table = ui.client.get(f"{UI_PATH}/history/export", params={"format": "csv", "since": "30d"})
    assert table.headers["content-type"].startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(table.text)))
    assert len(lines) == 41
    assert lines[-1]["caller"] == "insight-agent"
    assert ui.client.get(f"{UI_PATH}/history/export", params={"format": "xml"}).status_code == 400
    assert ui.client.get(f"{UI_PATH}/history/export", params={"since": "soon"}).status_code == 400


def test_one_call_is_said_in_the_singular_and_the_placeholders_are_recent_dates(ui: Ui) -> None:
    ui.login()
    page = unescape(ui.client.get(f"{UI_PATH}/insights", params={"range": "7d"}).text)
    assert 'id="insights-calls">1</strong>call</div>' in page  # the hostile record ui_support wrote
    assert "1 calls" not in page
    assert re.search(r'id="insights-asked">0</strong>consent questions,', page)
    today = datetime.now(UTC)
    yesterday = (today - timedelta(days=1)).strftime("%Y-%m-%d")
    assert f'placeholder="{yesterday}, 3d"' in page
    assert f'placeholder="{today:%Y-%m-%d}T12:00Z"' in page
    assert "2025-" not in page

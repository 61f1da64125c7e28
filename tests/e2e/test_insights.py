"""Usage statistics for real: the installed gateway over HTTP serves three apps (the echo app over DBus and
through the ipc envelope, and the notes example whose app is not running) to two SDK clients, 305 calls of
which 88 fail; `aai-gateway stats --json` counts them, `history export` writes them (a password argument
redacted) as JSON lines and CSV, and Chromium shows the same numbers on the Insights page."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import expect, sync_playwright

from tests.e2e.mcp_client import Consenter, text_of, web_gateway
from tests.support import EXAMPLES, ROOT, TEST_APPS, Bus, gateway_command, install_descriptor, running, start_app
from tests.web.test_browser import CHROMIUM, login_url

pytestmark = [pytest.mark.e2e]

SECRET = "hunter2-not-for-the-history"
AGENT_A, AGENT_B = "insights-agent-a", "insights-agent-b"
ARTIFACTS = ROOT / "test-artifacts" / "ui"
"""insights.png there is the screenshot docs/insights.png copies."""


@dataclass
class Served:
    env: dict[str, str]
    ui_url: str
    home: Path


@asynccontextmanager
async def session_of(url: str, name: str, *, consent: Consenter | None) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(
            read, write, elicitation_callback=consent, client_info=types.Implementation(name=name, version="1")
        ) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, app: str, tool: str, args: dict[str, Any]) -> bool:
    """One aai_exec; whether it succeeded."""
    result = await session.call_tool("aai_exec", {"app": app, "tool": tool, "args": args})
    if not result.is_error:
        text_of(result)
    return not result.is_error


async def drive(url: str) -> None:
    """305 calls: agent A 218 to the echo app (63 failing, 5 asking consent and allowed once), agent B 62 + 10
    to the envelope (10 denied by the app), 15 to the notes app (not running), 3 asking consent unanswerably."""
    async with session_of(url, AGENT_A, consent=Consenter("once")) as a:
        for n in range(150):
            assert await call(a, "dev.aai.echo", "echo", {"text": f"t{n}", "password": SECRET})
        for _ in range(40):
            assert not await call(a, "dev.aai.echo", "fail", {"message": "boom"})
        for _ in range(20):
            assert not await call(a, "dev.aai.echo", "add", {"a": "one", "b": 2})
        for _ in range(5):
            assert await call(a, "dev.aai.echo", "scale", {"value": 2, "factor": 3})
    async with session_of(url, AGENT_B, consent=None) as b:
        for n in range(62):
            assert await call(b, "dev.aai.echo-ipc", "echo", {"text": f"e{n}"})
        for _ in range(10):
            assert not await call(b, "dev.aai.echo-ipc", "deny", {})
        for _ in range(15):
            assert not await call(b, "dev.aai.notes", "count_notes", {})
        for _ in range(3):
            assert not await call(b, "dev.aai.echo", "scale", {"value": 2, "factor": 3})


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("insights")
    home = folder / "home"
    for source in (
        TEST_APPS / "dev.aai.echo" / "aai.json",
        TEST_APPS / "dev.aai.echo-ipc" / "aai.json",
        EXAMPLES / "dev.aai.notes" / "aai.json",
    ):
        install_descriptor(home / ".aai", source)
    consent = {"default": "allow", "rules": [{"app": "dev.aai.echo", "tool": "scale", "decision": "ask"}]}
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": consent}))
    bus = Bus(folder / "bus")
    try:
        env = bus.env(HOME=str(home), AAI_PLATFORM="linux")
        stderr = folder / "stderr.log"
        echo = start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())
        with running(echo), web_gateway(env, stderr) as mcp_url:
            anyio.run(drive, mcp_url)
            yield Served(env, login_url(stderr), home)
    finally:
        bus.stop()


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([gateway_command(), *args], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def nearest_rank(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def test_stats_json_counts_every_call(served: Served) -> None:
    found = json.loads(cli(served.env, "stats", "--since", "1h", "--json"))
    assert (found["calls"], found["errors"]) == (305, 88)
    assert {a["app"]: (a["calls"], a["errors"]) for a in found["apps"]} == {
        "dev.aai.echo": (218, 63),
        "dev.aai.echo-ipc": (72, 10),
        "dev.aai.notes": (15, 15),
    }
    assert {(c["caller"], c["calls"], c["errors"]) for c in found["callers"]} == {(AGENT_A, 215, 60), (AGENT_B, 90, 28)}
    kinds = {(e["app"], e["tool"], e["type"]): e["count"] for e in found["errorTypes"]}
    assert kinds == {
        ("dev.aai.echo", "fail", "AUTOMATION_FAILED"): 40,
        ("dev.aai.echo", "add", "INVALID_PARAMS"): 20,
        ("dev.aai.notes", "count_notes", "APP_NOT_RUNNING"): 15,
        ("dev.aai.echo-ipc", "deny", "PERMISSION_DENIED"): 10,
        ("dev.aai.echo", "scale", "CONSENT_REQUIRED"): 3,
    }
    assert found["consent"] == {"asked": 8, "answered": 5, "outcomes": {"once": 5, "unanswered": 3}}
    assert sum(b["calls"] for b in found["perBucket"]) == 305

    records = [json.loads(line) for line in cli(served.env, "history", "export", "--format", "jsonl").splitlines()]
    for tool in found["tools"]:
        durations = [r["durationMs"] for r in records if (r["app"], r["tool"]) == (tool["app"], tool["tool"])]
        assert tool["calls"] == len(durations)
        assert tool["p50Ms"] == pytest.approx(nearest_rank(durations, 0.5), abs=0.002)
        assert tool["p95Ms"] == pytest.approx(nearest_rank(durations, 0.95), abs=0.002)

    only = json.loads(cli(served.env, "stats", "--app", "dev.aai.echo", "--tool", "scale", "--json"))
    assert (only["calls"], only["errors"], only["consent"]["asked"]) == (8, 3, 8)
    text = cli(served.env, "stats")
    assert "305 calls, 88 failed (28.9 %)" in text
    assert re.search(r"\ndev\.aai\.notes +count_notes +APP_NOT_RUNNING +15\n", text), text


def test_export_writes_every_call_redacted(served: Served, tmp_path: Path) -> None:
    lines = cli(served.env, "history", "export").splitlines()
    assert len(lines) == 305
    records = [json.loads(line) for line in lines]
    assert Counter(r["status"] for r in records) == {"ok": 217, "error": 88}
    echoed = [r for r in records if r["tool"] == "echo" and r["app"] == "dev.aai.echo"]
    assert len(echoed) == 150
    assert {r["args"]["password"] for r in echoed} == {"[redacted]"}
    assert [r["args"]["text"] for r in echoed] == [f"t{n}" for n in range(150)]  # in the order recorded
    assert Counter(r["consent"] for r in records if r["consent"]) == {"once": 5, "unanswered": 3}

    out = tmp_path / "failed.csv"
    assert cli(served.env, "history", "export", "--format", "csv", "--status", "error", "--out", str(out)) == ""
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 88
    assert Counter(r["error_type"] for r in rows)["AUTOMATION_FAILED"] == 40
    every = cli(served.env, "history", "export", "--format", "csv", "--caller", AGENT_A, "--app", "dev.aai.echo")
    assert len(list(csv.DictReader(io.StringIO(every)))) == 215
    assert SECRET not in every
    assert SECRET not in "\n".join(lines)
    assert SECRET not in (served.home / ".aai" / "history.db").read_bytes().decode("latin-1")
    assert cli(served.env, "history", "export", "--app", "no.such.app") == ""


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (/usr/bin/chromium)")
def test_the_insights_page_shows_the_same_numbers(served: Served) -> None:
    with sync_playwright() as playwright:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("dialog", lambda dialog: pytest.fail(f"a script ran in the page: {dialog.message}"))
            blocked: list[str] = []
            page.on("console", lambda message: blocked.append(message.text) if message.type == "error" else None)
            page.goto(served.ui_url)
            page.get_by_role("link", name="Insights").click()
            expect(page.locator("h1")).to_have_text("Insights")
            page.locator("select[name=range]").select_option("24h")
            page.get_by_role("button", name="Show").click()
            expect(page.locator("#insights-calls")).to_have_text("305")
            expect(page.locator("#insights-errors")).to_have_text("88")
            expect(page.locator("#insights-asked")).to_have_text("8")

            def titles(plot: str) -> list[str]:
                return page.locator(f"svg#{plot} title").all_text_contents()

            assert "dev.aai.echo: 28.9 % (63 of 218)" in titles("plot-app-errors")
            assert "dev.aai.notes: 100.0 % (15 of 15)" in titles("plot-app-errors")
            assert "dev.aai.echo:fail AUTOMATION_FAILED: 40 calls" in titles("plot-error-kinds")
            assert f"{AGENT_A}: 215 calls, 60 failed" in titles("plot-callers")
            assert {"asked: 8", "answered: 5", "allowed once: 5", "not answered: 3"} <= set(titles("plot-consent"))
            usage = titles("plot-usage")
            assert sum(int(t.rsplit(": ", 1)[1].split()[0]) for t in usage[1:]) == 305
            assert any(t.startswith("dev.aai.echo-ipc, ") for t in usage)
            durations = " ".join(titles("plot-durations"))
            assert "dev.aai.echo:echo, p50: p50 " in durations

            callers = page.locator("#callers details")
            expect(callers.locator("table")).not_to_be_visible()
            callers.locator("summary").click()
            expect(callers.locator("tbody tr").first).to_have_text(f"{AGENT_A}21560")
            assert page.locator("svg.plot").count() == 6
            assert not [m for m in blocked if "Content Security Policy" in m]
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            callers.locator("summary").click()
            page.screenshot(path=str(ARTIFACTS / "insights.png"), full_page=True)
            page.set_viewport_size({"width": 390, "height": 844})
            width = page.evaluate("document.querySelector('svg#plot-usage').getBoundingClientRect().width")
            assert 300 < width <= 390
            page.screenshot(path=str(ARTIFACTS / "insights-phone.png"), full_page=True)
        finally:
            browser.close()

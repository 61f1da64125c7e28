"""A pytest plugin for `scripts/hostile`: counts the cases of every `hostile(area)` test and prints, per area, how
many were tried, held (passed) and failed. Loaded with `-p tests.hostile_report`."""

from __future__ import annotations

from collections import Counter

import pytest

AREAS: dict[str, str] = {}
"""The area of each collected hostile case, by node id."""
OUTCOMES: dict[str, str] = {}
""""held", "failed" or "skipped", by node id: a failure in any phase (setup, call, teardown) makes the case failed."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker("hostile")
        if marker is not None:
            AREAS[item.nodeid] = str(marker.args[0]) if marker.args else "(no area)"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    area = AREAS.get(report.nodeid)
    if area is None:
        return
    if report.failed:
        OUTCOMES[report.nodeid] = "failed"
    elif report.skipped:
        OUTCOMES.setdefault(report.nodeid, "skipped")
    elif report.when == "call":
        OUTCOMES.setdefault(report.nodeid, "held")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    tally = Counter((AREAS[node], outcome) for node, outcome in OUTCOMES.items())
    areas = sorted({area for area, _ in tally})
    write = terminalreporter.write_line
    write("")
    write(f"{'area':<24} {'tried':>6} {'held':>6} {'failed':>6}")
    for area in areas:
        held, failed, skipped = (tally[area, k] for k in ("held", "failed", "skipped"))
        note = f"  ({skipped} skipped)" if skipped else ""
        write(f"{area:<24} {held + failed:>6} {held:>6} {failed:>6}{note}")
    total_held = sum(n for (_, k), n in tally.items() if k == "held")
    total_failed = sum(n for (_, k), n in tally.items() if k == "failed")
    write(f"{'all':<24} {total_held + total_failed:>6} {total_held:>6} {total_failed:>6}")

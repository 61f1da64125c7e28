"""The Insights page's content: the range asked for, and each plot of the usage statistics with its numbers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from markupsafe import Markup

from aai_gateway.history import read_time
from aai_gateway.history.stats import MAX_TOOLS, Stats
from aai_gateway.web.plots import Row, Series, bars, counted, stacked_columns

RANGES = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
RANGE_TITLES = {"24h": "Last 24 hours", "7d": "Last 7 days", "30d": "Last 30 days", "custom": "Custom"}
DEFAULT_RANGE = "7d"
MAX_APPS = 7
"""Apps drawn each in its own colour in the usage plot; the others are drawn together."""
OUTCOME_TITLES = {
    "once": "allowed once",
    "tool": "allowed the tool",
    "app": "allowed the app",
    "deny": "denied once",
    "never": "denied the tool",
    "decided": "decided in the UI or CLI while waiting",
    "unanswered": "not answered",
}


@dataclass(frozen=True, slots=True)
class Chosen:
    """What the page was asked for: the range and filters as typed, and the times they mean."""

    given: dict[str, str]
    since: datetime
    until: datetime
    app: str | None
    tool: str | None
    notes: tuple[str, ...] = ()
    """How a time past what the history filters name was taken (0001-01-01 as 1970-01-01)."""


def choose(query: Mapping[str, str], now: datetime) -> tuple[Chosen, list[str]]:
    """The range and filters of the page's query string; errors name what was wrong (the default is used)."""
    given = {k: query.get(k, "").strip() for k in ("range", "since", "until", "app", "tool")}
    errors: list[str] = []
    notes: list[str] = []
    if given["range"] not in RANGE_TITLES:
        if given["range"]:
            errors.append(f"range must be one of {', '.join(RANGE_TITLES)}")
        given["range"] = "custom" if given["since"] or given["until"] else DEFAULT_RANGE
    since, until = now - RANGES.get(given["range"], RANGES[DEFAULT_RANGE]), now
    if given["range"] == "custom":
        for key in ("since", "until"):
            if given[key]:
                try:
                    moment, note = read_time(given[key], now)
                except (ValueError, OverflowError) as exc:
                    errors.append(f"{key}: {exc}")
                    continue
                if note:
                    notes.append(f"{key}: {note}")
                if key == "since":
                    since = moment
                else:
                    until = moment
        if since > until:
            errors.append("since is later than until")
            since, until = now - RANGES[DEFAULT_RANGE], now
    return Chosen(given, since, until, given["app"] or None, given["tool"] or None, tuple(notes)), errors


def insights_context(stats: Stats) -> dict[str, Any]:
    """The template's plots, each with its table, and the totals."""
    return {
        "stats": stats,
        "error_rate": f"{100 * stats.errors / stats.calls:.1f} %" if stats.calls else "-",
        "placeholders": placeholders(stats.until),
        "plots": [
            usage(stats),
            app_errors(stats),
            error_kinds(stats),
            durations(stats),
            callers(stats),
            consent(stats),
        ],
    }


def placeholders(until: datetime) -> dict[str, str]:
    """Examples for the custom range's fields, near the range shown: yesterday (or an age), today at noon."""
    return {"since": f"{(until - timedelta(days=1)):%Y-%m-%d}, 3d", "until": f"{until:%Y-%m-%d}T12:00Z"}


def usage(stats: Stats) -> dict[str, Any]:
    names = [a.name for a in stats.apps]
    drawn, others = names[:MAX_APPS], names[MAX_APPS:]
    series = [
        Series(name, [c.calls if (c := stats.per_bucket.get(b, {}).get(name)) else 0 for b in stats.buckets])
        for name in drawn
    ]
    if others:
        rest = [sum(c.calls for n, c in stats.per_bucket.get(b, {}).items() if n in others) for b in stats.buckets]
        series.append(Series(f"{len(others)} other apps", rest))
    per = "hour (UTC)" if stats.bucket == "hour" else "day (UTC)"
    title = f"Calls per {per} and app"
    rows = [
        [b, name, count.calls, count.errors]
        for b in stats.buckets
        for name, count in sorted(stats.per_bucket.get(b, {}).items())
    ]
    svg = stacked_columns("plot-usage", title, stats.buckets, series, "calls")
    return _plot("usage", title, svg, ["Time", "App", "Calls", "Failed"], rows)


def app_errors(stats: Stats) -> dict[str, Any]:
    title = "Error rate per app"
    rows = [
        Row(a.name, [100 * a.error_rate], [f"{100 * a.error_rate:.1f} % ({a.errors} of {a.calls})"]) for a in stats.apps
    ]
    table = [[a.name, a.calls, a.errors, f"{100 * a.error_rate:.1f} %"] for a in stats.apps]
    svg = bars("plot-app-errors", title, rows, ["error rate"])
    return _plot("app-errors", title, svg, ["App", "Calls", "Failed", "Error rate"], table)


def error_kinds(stats: Stats) -> dict[str, Any]:
    title = "Most common errors per app and tool"
    rows = [Row(f"{e.app}:{e.tool} {e.error_type}", [e.count], [counted(e.count, "calls")]) for e in stats.error_kinds]
    table = [[e.app, e.tool, e.error_type, e.count] for e in stats.error_kinds]
    svg = bars("plot-error-kinds", title, rows, ["calls"])
    tools = [[t.app, t.tool, t.calls, t.errors, f"{100 * t.error_rate:.1f} %"] for t in stats.tools]
    return {
        **_plot("error-kinds", title, svg, ["App", "Tool", "Error type", "Calls"], table),
        "more": {
            "title": "Error rate per tool",
            "headers": ["App", "Tool", "Calls", "Failed", "Error rate"],
            "rows": tools,
        },
    }


def durations(stats: Stats) -> dict[str, Any]:
    """The busiest MAX_TOOLS tools' p50, p95 and p99 (from the hourly sketches: within 1 %)."""
    title = "Duration per tool: p50, p95 and p99 (ms)"
    timed = [t for t in stats.tools[:MAX_TOOLS] if t.p50_ms is not None]
    rows = [
        Row(
            f"{t.app}:{t.tool}",
            [t.p50_ms or 0, t.p95_ms or 0, t.p99_ms or 0],
            [f"p50 {t.p50_ms or 0:.1f} ms", f"p95 {t.p95_ms or 0:.1f} ms", f"p99 {t.p99_ms or 0:.1f} ms"],
        )
        for t in timed
    ]
    table = [[t.app, t.tool, t.calls, *(f"{ms or 0:.1f}" for ms in (t.p50_ms, t.p95_ms, t.p99_ms))] for t in timed]
    svg = bars("plot-durations", title, rows, ["p50", "p95", "p99"])
    return _plot("durations", title, svg, ["App", "Tool", "Calls", "p50 ms", "p95 ms", "p99 ms"], table)


def callers(stats: Stats) -> dict[str, Any]:
    title = "Busiest callers"
    rows = [Row(c.name, [c.calls], [f"{counted(c.calls, 'calls')}, {c.errors} failed"]) for c in stats.callers]
    table = [[c.name, c.calls, c.errors] for c in stats.callers]
    svg = bars("plot-callers", title, rows, ["calls"])
    return _plot("callers", title, svg, ["Caller", "Calls", "Failed"], table)


def consent(stats: Stats) -> dict[str, Any]:
    title = "Consent questions asked and answered"
    asked, answered = stats.consent.asked, stats.consent.answered
    counts = [("asked", asked), ("answered", answered)]
    counts += [(OUTCOME_TITLES.get(o, o), n) for o, n in sorted(stats.consent.outcomes.items())]
    rows = [Row(label, [n], [f"{n}"]) for label, n in counts] if asked else []
    svg = bars("plot-consent", title, rows, ["questions"])
    return _plot("consent", title, svg, ["Questions", "Count"], [[label, n] for label, n in counts])


def _plot(key: str, title: str, svg: str, headers: list[str], rows: list[list[Any]]) -> dict[str, Any]:
    # plots.py escapes every text it writes into the SVG
    return {"key": key, "title": title, "svg": Markup(svg), "headers": headers, "rows": rows}  # noqa: S704

"""`aai-gateway stats`: the usage statistics the UI's Insights page shows, as text or JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import click

from aai_gateway.cli.common import TimeParam, check_range, fail, history_store, terminal_safe
from aai_gateway.history import HistoryUnavailable
from aai_gateway.history.stats import Stats

DEFAULT_SPAN = timedelta(days=7)


@click.command(short_help="Usage statistics of the call history: calls, errors, durations, callers, consent.")
@click.option("--app", help="Only calls to this app id.")
@click.option("--tool", help="Only calls of this tool.")
@click.option(
    "--since",
    type=TimeParam(),
    help="From this time on: ISO (UTC unless a zone is given) or an age: 2h, 7d. Default: 7d.",
)
@click.option("--until", type=TimeParam(), help="Up to this time, in the same forms as --since. Default: now.")
@click.option("--json", "as_json", is_flag=True, help="Print every figure as JSON.")
@click.pass_context
def stats(
    ctx: click.Context, app: str | None, tool: str | None, since: datetime | None, until: datetime | None, as_json: bool
) -> None:
    """Calls per day and app, error rates and the most common errors, p50/p95/p99 duration per tool, the
    busiest callers and the consent questions asked and answered: the numbers of the UI's Insights page."""
    until = until or datetime.now(UTC)
    since = since or until - DEFAULT_SPAN
    check_range(since, until)
    store = history_store(ctx)
    try:
        found = store.stats(since, until, app=app, tool=tool)
    except HistoryUnavailable as exc:
        fail(str(exc), 1)
    if as_json:
        click.echo(json.dumps(found.to_json(), ensure_ascii=False, indent=2))
    else:
        click.echo("\n".join(report(found)))


def report(found: Stats) -> list[str]:
    """The statistics as the lines of plain tables."""
    span = f"{found.since:%Y-%m-%d %H:%M} to {found.until:%Y-%m-%d %H:%M} UTC"
    rate = f"{100 * found.errors / found.calls:.1f} %" if found.calls else "-"
    out = [f"{found.calls} calls, {found.errors} failed ({rate}), from {span}."]
    if not found.calls:
        return out
    per = "HOUR (UTC)" if found.bucket == "hour" else "DAY (UTC)"
    out += _table(
        f"Calls per {found.bucket}",
        [per, "APP", "CALLS", "FAILED"],
        [[b, n, c.calls, c.errors] for b in found.buckets for n, c in sorted(found.per_bucket.get(b, {}).items())],
    )
    out += _table(
        "Error rate per app",
        ["APP", "CALLS", "FAILED", "RATE"],
        [[a.name, a.calls, a.errors, f"{100 * a.error_rate:.1f} %"] for a in found.apps],
    )
    out += _table(
        "Per tool",
        ["APP", "TOOL", "CALLS", "FAILED", "RATE", "P50 MS", "P95 MS", "P99 MS"],
        [
            [t.app, t.tool, t.calls, t.errors, f"{100 * t.error_rate:.1f} %", *map(_ms, (t.p50_ms, t.p95_ms, t.p99_ms))]
            for t in found.tools
        ],
    )
    every = found.durations
    out += [
        "",
        f"Duration of every call: p50 {_ms(every.p50_ms)} ms, p95 {_ms(every.p95_ms)} ms, p99 {_ms(every.p99_ms)} ms",
    ]
    out += _table(
        "Most common errors",
        ["APP", "TOOL", "ERROR TYPE", "CALLS"],
        [[e.app, e.tool, e.error_type, e.count] for e in found.error_kinds],
    )
    out += _table(
        "Busiest callers", ["CALLER", "CALLS", "FAILED"], [[c.name, c.calls, c.errors] for c in found.callers]
    )
    consent = found.consent
    out += _table(
        "Consent questions",
        ["OUTCOME", "COUNT"],
        [["asked", consent.asked], ["answered", consent.answered], *sorted(map(list, consent.outcomes.items()))],
    )
    return out


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _table(title: str, headers: list[str], rows: list[list[object]]) -> list[str]:
    if not rows:
        return []
    cells = [headers, *[[terminal_safe(str(c))[:60] for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [
        all(isinstance(row[i], int | float) or str(row[i]).endswith(("%", "-")) for row in rows)
        for i in range(len(headers))
    ]
    lines = ["", title]
    for row in cells:
        lines.append(
            "  ".join(
                c.rjust(w) if right else c.ljust(w) for c, w, right in zip(row, widths, numeric, strict=True)
            ).rstrip()
        )
    return lines

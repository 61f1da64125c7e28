"""`aai-gateway history`: the calls the gateway ran, from the SQLite store in the AAI home; a run of a plan
or workflow is one entry with its steps and undos beneath it."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import click

from aai_gateway.cli.common import check_range, fail, history_filters, history_store, terminal_safe
from aai_gateway.cli.export import export
from aai_gateway.history import HistoryStore, HistoryUnavailable, Record
from aai_gateway.history.runs import NOT_RECORDED, SHOWN, Entry
from aai_gateway.processes import alive


@click.group(invoke_without_command=True, short_help="List the calls the gateway ran; `history show ID` prints one.")
@history_filters
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many entries.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of whole records, each run with its steps.")
@click.pass_context
def history(
    ctx: click.Context,
    app: str | None,
    tool: str | None,
    status: str | None,
    caller: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
    as_json: bool,
) -> None:
    """List the calls the gateway ran, newest first (times in UTC); `history show ID` prints one whole.

    A run of a plan or workflow is one entry (app aai.workflows) with its steps and undos beneath it; a
    run is listed when it or one of its steps matches the filters. Arguments and results are kept with
    secrets redacted, for historyRetentionDays (30 by default).
    """
    if ctx.invoked_subcommand is not None:
        return
    check_range(since, until)
    store = history_store(ctx)
    _warn_of_trouble(store)
    filters: dict[str, Any] = {"app": app, "tool": tool, "status": status, "caller": caller}
    try:
        entries = store.entries(**filters, since=since, until=until, limit=limit)
        total = store.count_entries(**filters, since=since, until=until) if len(entries) == limit else len(entries)
    except HistoryUnavailable as exc:
        fail(str(exc), 1)
    if as_json:
        click.echo(json.dumps([e.to_json() for e in entries], ensure_ascii=False, indent=2))
        return
    if not entries:
        filtered = any(v is not None for v in (*filters.values(), since, until))
        click.echo("No calls match these filters." if filtered else "No calls recorded yet.")
        return
    rows: list[tuple[str, ...] | str] = [("TIME (UTC)", "ID", "CALLER", "VIA", "APP:TOOL", "STATUS", "MS")]
    for entry in entries:
        rows.extend(_entry_rows(entry))
    click.echo("\n".join(_table(rows)))
    if total > len(entries):
        click.echo(f"\n{len(entries)} of {total} entries; raise --limit or narrow the filters to see others.")


def _entry_rows(entry: Entry) -> list[tuple[str, ...] | str]:
    """A call's row; a run's row with a row per step beneath it; a step whose run is missing, and a line naming it."""
    record = entry.record
    found: list[tuple[str, ...] | str] = [
        (
            record.time.strftime("%Y-%m-%d %H:%M:%S"),
            record.call_id,
            terminal_safe(record.caller)[:24],
            record.transport,
            _app_tool(record),
            _outcome(record),
            f"{record.duration_ms:.1f}",
        )
    ]
    if entry.run_missing:
        found.append(f"  step {_label(record)} of run {record.parent} ({NOT_RECORDED})")
    for child in entry.children:
        found.append(
            (f"  {_label(child)}", child.call_id, "", "", _app_tool(child), _outcome(child), f"{child.duration_ms:.1f}")
        )
    if entry.more:
        found.append(f"  ... and {entry.more} more: aai-gateway history show {record.call_id}")
    return found


def _table(rows: list[tuple[str, ...] | str]) -> list[str]:
    """Rows as aligned columns (the last one right-aligned); a plain string is a line of its own."""
    cells = [row for row in rows if not isinstance(row, str)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = []
    for row in rows:
        if isinstance(row, str):
            lines.append(row)
            continue
        left = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=False)]
        lines.append("  ".join([*left, row[-1].rjust(widths[-1])]))
    return lines


def _app_tool(record: Record) -> str:
    return terminal_safe(f"{record.app}:{record.tool}")[:60]


def _outcome(record: Record) -> str:
    return "ok" if record.status == "ok" else f"{record.error_code or ''} {record.error_type or 'error'}".strip()


def _label(record: Record) -> str:
    return terminal_safe(record.step or "(no label)")[:40]


def _warn_of_trouble(store: HistoryStore) -> None:
    """A line on stderr when a gateway could not write the history: its records wait in memory, or are lost."""
    trouble = store.reported_trouble()
    if trouble is None:
        return
    if alive(trouble.pid):
        click.echo(f"aai-gateway: {trouble.describe()} (gateway pid {trouble.pid})", err=True)
    else:
        lost = trouble.waiting + trouble.dropped
        click.echo(
            f"aai-gateway: {lost} call record(s) were lost: the gateway (pid {trouble.pid}) ended while "
            f"the history could not be written since {trouble.since}: {trouble.reason}",
            err=True,
        )


@history.command("show", short_help="Print one call whole: arguments, outcome and result; a run with its steps.")
@click.argument("call_id", metavar="CALL_ID")
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON (a run with its steps).")
@click.pass_context
def history_show(ctx: click.Context, call_id: str, as_json: bool) -> None:
    """Print one call whole: who, what, arguments, outcome and result excerpt. A run shows its steps and
    undos as a tree, each with its outcome and duration; a step names its run."""
    store = history_store(ctx)
    _warn_of_trouble(store)
    try:
        record = store.get(call_id.strip())
        run = None if record is None or record.parent is None else store.get(record.parent)
        children, steps = store.children(record.call_id, SHOWN) if record is not None else ([], 0)
    except HistoryUnavailable as exc:
        fail(str(exc), 1)
    if record is None:
        fail(f"no call {call_id!r} in the history ({store.path}); `aai-gateway history` lists the calls kept", 1)
    if as_json:
        click.echo(json.dumps(Entry(record, tuple(children), steps).to_json(), ensure_ascii=False, indent=2))
        return
    status = "ok" if record.status == "ok" else f"error {record.error_code or ''} {record.error_type or ''}".rstrip()
    lines = [f"call      {record.call_id}"]
    if record.parent is not None:
        of = f"{_app_tool(run)}, {run.time:%Y-%m-%d %H:%M:%S}" if run is not None else NOT_RECORDED
        lines.append(f"run       {record.parent} ({of}), step {_label(record)}")
    lines += [
        f"time      {record.time.isoformat(timespec='milliseconds')}",
        f"caller    {terminal_safe(record.caller)} over {record.transport}",
        f"app       {terminal_safe(record.app)}",
        f"tool      {terminal_safe(record.tool)}",
        f"status    {status}",
        f"duration  {record.duration_ms:.1f} ms",
    ]
    if record.error_detail is not None:
        lines.append(f"detail    {terminal_safe(record.error_detail)}")
    if steps:
        first = f" (the first {SHOWN})" if steps > SHOWN else ""
        lines.append(f"steps     {steps}, in the order they started{first}")
        lines.extend(_tree(children))
    lines.append("arguments")
    lines.extend("  " + line for line in json.dumps(record.args, ensure_ascii=False, indent=2).splitlines())
    if record.result is not None:
        lines.append("result" + (f" (first {len(record.result)} characters)" if record.result_truncated else ""))
        lines.append("  " + terminal_safe(record.result))
    click.echo("\n".join(lines))


def _tree(children: list[Record]) -> list[str]:
    """A run's steps as the branches of a tree: label, app:tool, outcome, duration and call id."""
    rows: list[tuple[str, ...] | str] = []
    for n, child in enumerate(children):
        branch = "`-" if n == len(children) - 1 else "|-"
        ms = f"{child.duration_ms:.1f} ms"
        rows.append((f"  {branch} {_label(child)}", _app_tool(child), _outcome(child), child.call_id, ms))
    return _table(rows)


history.add_command(export)

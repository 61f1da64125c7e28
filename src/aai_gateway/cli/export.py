"""`aai-gateway history export`: the calls the history keeps, as JSON lines or CSV, streamed."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import click

from aai_gateway.cli.common import TimeParam, fail, settings_of
from aai_gateway.history import HISTORY_FILE, STATUSES, HistoryStore, HistoryUnavailable
from aai_gateway.history.export import FORMATS, lines


@click.command("export", short_help="Write the calls as JSON lines or CSV, oldest first, secrets redacted as kept.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="jsonl", show_default=True, help="The format.")
@click.option("--app", help="Only calls to this app id.")
@click.option("--tool", help="Only calls of this tool.")
@click.option("--status", type=click.Choice(STATUSES), help="Only calls that succeeded, or that failed.")
@click.option("--caller", help="Only calls from this client (its MCP clientInfo name, or cli).")
@click.option(
    "--since", type=TimeParam(), help="From this time on: ISO (UTC unless a zone is given) or an age: 2h, 7d."
)
@click.option("--until", type=TimeParam(), help="Up to this time, in the same forms as --since.")
@click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False, writable=True), help="Write to this file, not stdout."
)
@click.pass_context
def export(
    ctx: click.Context,
    fmt: str,
    app: str | None,
    tool: str | None,
    status: str | None,
    caller: str | None,
    since: datetime | None,
    until: datetime | None,
    out: Path | None,
) -> None:
    """Write every call the filters choose, in the order recorded: one JSON object a line (each as
    `history --json` prints it), or CSV with a header line. Read and written a batch at a time, so a history
    of any size takes the same memory; arguments, results and details are redacted as they were kept."""
    if since is not None and until is not None and since > until:
        raise click.UsageError("--since is later than --until")
    settings = settings_of(ctx)
    store = HistoryStore(settings.aai_home / HISTORY_FILE, settings.history_retention_days)
    records = store.export(app=app, tool=tool, status=status, caller=caller, since=since, until=until)
    try:
        if out is None:
            for line in lines(records, fmt):
                sys.stdout.write(line)
            sys.stdout.flush()
        else:
            with out.open("w", encoding="utf-8", newline="") as file:
                file.writelines(lines(records, fmt))
    except HistoryUnavailable as exc:
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"cannot write {out or 'the output'}: {exc.strerror or exc}", 1)

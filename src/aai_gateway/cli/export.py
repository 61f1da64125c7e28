"""`aai-gateway history export`: the calls the history keeps, as JSON lines or CSV, streamed."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import click

from aai_gateway.cli.common import check_range, fail, history_filters, history_store
from aai_gateway.history import HistoryUnavailable
from aai_gateway.history.export import FORMATS, lines


@click.command("export", short_help="Write the calls as JSON lines or CSV, oldest first, secrets redacted as kept.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="jsonl", show_default=True, help="The format.")
@history_filters
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
    check_range(since, until)
    store = history_store(ctx)
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

"""The history as JSON lines or CSV, one record at a time, for `aai-gateway history export` and the UI's download.

The records are written as they are stored: arguments, results and error details were redacted before
they were kept. A CSV text cell that a spreadsheet would run as a formula (one starting with = + - @, a tab
or a carriage return) is written with a leading apostrophe, as spreadsheets expect.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any

from aai_gateway.history.record import Record
from aai_gateway.history.rows import COLUMNS, stored_row

FORMATS = ("jsonl", "csv")
MEDIA_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv"}
CSV_COLUMNS = tuple(name.strip() for name in COLUMNS.split(","))
"""The calls table's columns: a CSV row holds the record as the history keeps it (args as JSON text)."""
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def lines(records: Iterable[Record], fmt: str) -> Iterator[str]:
    """The text of each record in `fmt` (jsonl or csv; csv starts with its header line), each ending in a newline."""
    if fmt == "jsonl":
        for record in records:
            yield json.dumps(record.to_json(), ensure_ascii=False) + "\n"
        return
    if fmt != "csv":
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    yield buffer.getvalue()
    for record in records:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow([_cell(value) for value in stored_row(record)])
        yield buffer.getvalue()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value

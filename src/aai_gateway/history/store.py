"""The call history in SQLite, `<AAI home>/history.db`: `HistoryStore` records calls and answers queries.

It is the two rooms of the history joined: history/writer.py writes (one writer thread, commits on the
event loop, recovery from a deleted, corrupt or full database, checkpoints, retention) and
history/reader.py reads (queries, statistics, export, runs), each on connections of its own; the
schema and its migrations are in history/schema.py.
"""

from __future__ import annotations

from pathlib import Path

from aai_gateway.history.reader import EXPORT_BATCH, HistoryReader
from aai_gateway.history.schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION, HistoryUnavailable
from aai_gateway.history.writer import CHECKPOINT_EVERY, HistoryWriter, Trouble

__all__ = [
    "CHECKPOINT_EVERY",
    "EXPORT_BATCH",
    "HISTORY_FILE",
    "MIGRATIONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "HistoryStore",
    "HistoryUnavailable",
    "Trouble",
]

HISTORY_FILE = "history.db"


class HistoryStore(HistoryWriter, HistoryReader):
    """Records calls and answers queries. Nothing is opened until the first write, `start` or query."""

    def __init__(self, path: Path, retention_days: float = 30.0) -> None:
        HistoryWriter.__init__(self, path, retention_days)
        HistoryReader.__init__(self, path)

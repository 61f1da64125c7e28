"""The call history: every call through the gateway, redacted, in SQLite under the AAI home."""

from aai_gateway.history.record import STATUSES, Record
from aai_gateway.history.recorder import Recorder, known_secrets
from aai_gateway.history.redact import Redactor
from aai_gateway.history.store import HISTORY_FILE, HistoryStore, HistoryUnavailable
from aai_gateway.history.times import parse_time, read_time

__all__ = [
    "HISTORY_FILE",
    "STATUSES",
    "HistoryStore",
    "HistoryUnavailable",
    "Record",
    "Recorder",
    "Redactor",
    "known_secrets",
    "parse_time",
    "read_time",
]

"""Times as people type them for history filters: an ISO date or time, or an age like 30m, 2h, 7d."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

AGE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)
"""The times a filter can name: no call is older than the Unix epoch, and the end leaves room for the
arithmetic of ranges (a week back, a bucket on) within the years a datetime holds."""


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """`read_time` without its note."""
    return read_time(text, now)[0]


def read_time(text: str, now: datetime | None = None) -> tuple[datetime, str | None]:
    """An aware UTC datetime within EARLIEST and LATEST, and a note when the time was moved into them; an
    ISO time without a zone is taken as UTC, an age counts back from `now`."""
    moment = _parsed(text, now)
    bounded = min(max(moment, EARLIEST), LATEST)
    if bounded == moment:
        return moment, None
    edge = "first" if bounded == EARLIEST else "last"
    return bounded, f"{text.strip()!r} is taken as {bounded:%Y-%m-%d}, the {edge} day a history filter can name"


def _parsed(text: str, now: datetime | None) -> datetime:
    value = text.strip()
    age = AGE.fullmatch(value)
    if age:
        number, unit = age.groups()
        try:
            return (now or datetime.now(UTC)) - timedelta(**{UNITS[unit.lower()]: float(number)})
        except OverflowError:
            raise ValueError(f"{text!r} reaches back before the year 1") from None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"expected an ISO date or time (2025-06-01, 2025-06-01T14:30Z) or an age like 30m, 2h, 7d; got {text!r}"
        ) from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+05:00 is before the first UTC time a datetime holds
        return datetime.min.replace(tzinfo=UTC) if moment.year == 1 else datetime.max.replace(tzinfo=UTC)

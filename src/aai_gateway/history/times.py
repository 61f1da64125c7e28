"""Times as people type them for history filters: an ISO date or time, or an age like 30m, 2h, 7d."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

AGE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """An aware UTC datetime; an ISO time without a zone is taken as UTC, an age counts back from `now`."""
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
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)

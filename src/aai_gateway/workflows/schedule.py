"""Timers for triggered workflows: `every: "15m"`, or `at: "daily 08:00"` / `"weekdays 18:30"` /
`"weekends 10:00"` / `"mon,thu 07:15"` in the user's time zone."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

EVERY = re.compile(r"(\d{1,6})\s*(s|m|h|d)")
AT = re.compile(
    r"(daily|weekdays|weekends|(?:mon|tue|wed|thu|fri|sat|sun)(?:,(?:mon|tue|wed|thu|fri|sat|sun))*)\s+(\d{1,2}):(\d{2})"
)
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SHORTEST = 10
"""Seconds: the shortest `every` (a timer is a trigger, not a busy loop)."""
LONGEST = 366 * 86400


def local_zone() -> tzinfo:
    """The user's time zone: `TZ`, else the system's (`/etc/localtime`), else UTC; daylight saving kept."""
    name = os.environ.get("TZ", "").lstrip(":")
    try:
        if name:
            return ZoneInfo(name)
        with Path("/etc/localtime").open("rb") as zone:
            return ZoneInfo.from_file(zone, key="localtime")
    except (OSError, ValueError, ZoneInfoNotFoundError):
        return UTC


class ScheduleError(ValueError):
    """A timer that cannot be read; the message says what a valid one looks like."""


@dataclass(frozen=True, slots=True)
class Every:
    seconds: int

    def next_after(self, now: datetime) -> datetime:
        return now + timedelta(seconds=self.seconds)

    def __str__(self) -> str:
        return f"every {self.seconds} s"


@dataclass(frozen=True, slots=True)
class At:
    days: frozenset[int]
    """Weekdays it fires on, Monday 0."""
    clock: time

    def next_after(self, now: datetime) -> datetime:
        """The first time after `now` (aware, in the user's zone) on one of `days` at `clock`."""
        for ahead in range(8):
            day = (now + timedelta(days=ahead)).date()
            if day.weekday() not in self.days:
                continue
            when = datetime.combine(day, self.clock, now.tzinfo)
            if when > now:
                return when
        raise AssertionError("a week always holds one of the days")

    def __str__(self) -> str:
        names = ",".join(DAYS[d] for d in sorted(self.days))
        return f"at {self.clock:%H:%M} on {names}"


def every(text: str) -> Every:
    match = EVERY.fullmatch(text.strip().lower())
    if match is None:
        raise ScheduleError(f'every: {text!r} is no interval; write a number and a unit: "30s", "15m", "2h", "1d"')
    seconds = int(match.group(1)) * UNITS[match.group(2)]
    if not SHORTEST <= seconds <= LONGEST:
        raise ScheduleError(f"every: {text!r} must be from {SHORTEST} s to 366 days")
    return Every(seconds)


def at(text: str) -> At:
    match = AT.fullmatch(text.strip().lower())
    if match is None:
        raise ScheduleError(
            f'at: {text!r} is no time of day; write "daily 08:00", "weekdays 18:30", "weekends 10:00" '
            'or days such as "mon,thu 07:15"'
        )
    which, hour, minute = match.group(1), int(match.group(2)), int(match.group(3))
    if hour > 23 or minute > 59:
        raise ScheduleError(f"at: {text!r} is no time of day (00:00 to 23:59)")
    if which == "daily":
        days = frozenset(range(7))
    elif which == "weekdays":
        days = frozenset(range(5))
    elif which == "weekends":
        days = frozenset({5, 6})
    else:
        days = frozenset(DAYS.index(d) for d in which.split(","))
    return At(days, time(hour, minute))

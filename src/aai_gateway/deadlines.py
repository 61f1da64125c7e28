"""Time limits for the calls under way, kept by one timer per event loop.

`asyncio.timeout(delay)` starts a timer for each call and stops it when the call ends: 4.5 µs a call on
uvloop, though calls almost never run out of time. `Deadlines.within(seconds)` limits a call the same
way (when its time is up the call is cancelled, and raises TimeoutError where the limit was entered;
a cancellation from elsewhere stays a cancellation) for about 1 µs: a single timer, set for the
earliest deadline of the calls under way, finds those whose time is up when it fires.
"""

from __future__ import annotations

import asyncio
import math
from types import TracebackType

EARLY = 0.001
"""Seconds a deadline may be found due before it is: the loop's timers fire to the millisecond."""


class Deadlines:
    def __init__(self) -> None:
        self._due: dict[_Within, float] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._at = math.inf

    def within(self, seconds: float) -> _Within:
        """An async context manager: what runs inside is cancelled after `seconds`, and TimeoutError raised."""
        return _Within(self, seconds)

    def _watch(self, limit: _Within, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if loop is not self._loop:  # a first call, or one on a new loop: what the old one kept is gone with it
            self._due, self._loop, self._timer, self._at = {}, loop, None, math.inf
        self._due[limit] = when
        if when < self._at:
            if self._timer is not None:
                self._timer.cancel()
            self._at, self._timer = when, loop.call_at(when, self._expire)

    def _forget(self, limit: _Within) -> None:
        self._due.pop(limit, None)

    def _expire(self) -> None:
        loop = self._loop
        assert loop is not None
        now = loop.time()
        earliest = math.inf
        for limit, when in list(self._due.items()):
            if when <= now + EARLY:
                del self._due[limit]
                limit.expire()
            else:
                earliest = min(earliest, when)
        self._at, self._timer = earliest, None if earliest == math.inf else loop.call_at(earliest, self._expire)


class _Within:
    """One call's limit: `asyncio.Timeout`'s way of telling its own cancellation from another's."""

    __slots__ = ("_cancelling", "_deadlines", "_expired", "_seconds", "_task")

    def __init__(self, deadlines: Deadlines, seconds: float) -> None:
        self._deadlines = deadlines
        self._seconds = seconds
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self._expired = False

    async def __aenter__(self) -> _Within:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Deadlines.within must be used inside a task")
        loop = task.get_loop()
        self._task, self._cancelling = task, task.cancelling()
        self._deadlines._watch(self, loop, loop.time() + self._seconds)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._deadlines._forget(self)
        task = self._task
        if (
            self._expired
            and task is not None
            and task.uncancel() <= self._cancelling
            and kind is asyncio.CancelledError
        ):
            raise TimeoutError from exc

    def expire(self) -> None:
        """The time is up: cancel the call."""
        if self._task is not None and not self._expired:
            self._expired = True
            self._task.cancel()

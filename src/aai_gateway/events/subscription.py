"""A waiter's own bounded queue of what happened, with its filter."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from jmespath.parser import ParsedResult

from aai_gateway import expressions
from aai_gateway.events.occurrence import Occurrence

log = logging.getLogger(__name__)

KEEP = 100
"""Occurrences a subscription keeps while nobody reads them; older ones are dropped and counted."""


class Subscription:
    """Occurrences of one app's event that pass `filter` (a JMESPath query over the payload), newest `KEEP` kept.

    Iterate it (`async for`) or `await next()`; `close()` (or leaving `async with`) unsubscribes, and the
    source stops once nobody is subscribed."""

    def __init__(self, app: str, event: str, filter: str | None, on_close: Callable[[Subscription], None]) -> None:
        self.app = app
        self.event = event
        self.filter: ParsedResult | None = expressions.compiled(filter, "filter") if filter else None
        self.dropped = 0
        """Occurrences dropped because the queue was full."""
        self._queue: deque[Occurrence] = deque(maxlen=KEEP)
        self._ready = asyncio.Event()
        self._failure: BaseException | None = None
        self._on_close = on_close
        self.closed = False

    def offer(self, occurrence: Occurrence) -> None:
        """Called by the source, on the event loop: keep `occurrence` if it passes the filter."""
        if self.closed or not self._passes(occurrence.payload):
            return
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1
        self._queue.append(occurrence)
        self._ready.set()

    def fail(self, error: BaseException) -> None:
        """The source cannot go on (the app's tool is refused, the bus cannot be reached): tell the waiter."""
        self._failure = error
        self._ready.set()

    def _passes(self, payload: Any) -> bool:
        if self.filter is None:
            return True
        try:
            return bool(self.filter.search(payload))
        except Exception as exc:  # a query that fails on this payload matches nothing
            log.debug("filter of %s:%s failed: %s", self.app, self.event, exc)
            return False

    async def next(self) -> Occurrence:
        while not self._queue:
            if self._failure is not None:
                raise self._failure
            self._ready.clear()
            await self._ready.wait()
        return self._queue.popleft()

    def __aiter__(self) -> AsyncIterator[Occurrence]:
        return self

    async def __anext__(self) -> Occurrence:
        return await self.next()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.clear()
            self._on_close(self)

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

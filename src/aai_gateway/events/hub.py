"""Every subscription to one app's event shares one source: started with the first, stopped after the last."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from aai_gateway.calls import Caller, Calls
from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.model import Event
from aai_gateway.events import notifications, polls, signals
from aai_gateway.events.occurrence import Occurrence, now, shaped
from aai_gateway.events.source import Source
from aai_gateway.events.subscription import Subscription

log = logging.getLogger(__name__)


SOURCES: dict[str, type[Source]] = {
    "dbus": signals.SignalSource,
    "poll": polls.PollSource,
    "mcp": notifications.NotificationSource,
}
"""One line per kind of source: the key an event names it by in the descriptor."""


class Fanout:
    """One app's event and its subscriptions: a source hands it each payload, which every subscription gets."""

    def __init__(self, app: Descriptor, event: Event, gone: Callable[[Fanout], None]) -> None:
        self.app = app
        self.event = event
        self.key = (app.app_id, event.name, json.dumps(event.source, sort_keys=True, default=str))
        """Subscriptions share a source when they share this (an event bound to the waiter's filter differs)."""
        self.subscriptions: set[Subscription] = set()
        self.source: Source | None = None
        self.starting: asyncio.Future[None] | None = None
        self._gone = gone

    def deliver(self, raw: Any) -> None:
        """A raw payload (a signal's fields, a poll's result): shaped once, offered to every subscription."""
        occurrence = Occurrence(self.app.app_id, self.event.name, shaped(self.event, raw), now())
        for subscription in list(self.subscriptions):
            subscription.offer(occurrence)

    def fail(self, error: BaseException) -> None:
        """The source stopped for good: every subscription is told, and the next subscriber starts it afresh."""
        for subscription in list(self.subscriptions):
            subscription.fail(error)
        self._gone(self)


class Events:
    """The sources of every app's events, shared by every waiter (and, later, triggers)."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        self._fanouts: dict[tuple[str, str, str], Fanout] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    async def subscribe(self, app: Descriptor, event: Event, filter: str | None, caller: Caller) -> Subscription:
        """A subscription to `app`'s `event`, its source started if it is not yet; ExpressionError for a
        filter that is no JMESPath query (or calls a function JMESPath does not have). The caller's name and
        consent run a poll's calls."""
        event = SOURCES[event.kind].bound(app, event, filter)
        fanout = Fanout(app, event, self._gone)
        fanout = self._fanouts.get(fanout.key) or fanout
        if fanout.source is None:
            self._fanouts[fanout.key] = fanout
            fanout.source = SOURCES[event.kind](self.calls, app, event, fanout, caller)
            fanout.starting = asyncio.ensure_future(fanout.source.start())
        subscription = Subscription(app.app_id, event.name, filter, lambda s: self._closed(fanout, s))
        fanout.subscriptions.add(subscription)
        assert fanout.starting is not None
        try:
            await asyncio.shield(fanout.starting)
        except BaseException:
            subscription.close()
            if fanout.starting.done() and not fanout.starting.cancelled() and fanout.starting.exception():
                self._gone(fanout)
            raise
        return subscription

    def listening(self) -> list[tuple[str, str, int]]:
        """The events whose sources run: app, event and how many subscriptions each has."""
        return [(app, event, len(f.subscriptions)) for (app, event, _), f in self._fanouts.items()]

    def _closed(self, fanout: Fanout, subscription: Subscription) -> None:
        fanout.subscriptions.discard(subscription)
        if not fanout.subscriptions:
            self._gone(fanout)

    def _gone(self, fanout: Fanout) -> None:
        if self._fanouts.get(fanout.key) is fanout:
            del self._fanouts[fanout.key]
        source, fanout.source = fanout.source, None
        if source is not None:
            task = asyncio.ensure_future(_stopped(source, fanout.starting))
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    async def aclose(self) -> None:
        for fanout in list(self._fanouts.values()):
            self._gone(fanout)
        if self._stopping:
            await asyncio.wait(list(self._stopping), timeout=2.0)


async def _stopped(source: Source, starting: asyncio.Future[None] | None) -> None:
    """Stop `source` once its start is over (a start still under way is waited for, not cut halfway)."""
    if starting is not None:
        try:
            await starting
        except BaseException:
            return
    try:
        await source.stop()
    except Exception:
        log.exception("an event source did not stop cleanly")

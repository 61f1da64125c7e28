"""What every kind of event source shares: the app's event it notices, and where it hands each payload."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aai_gateway import expressions
from aai_gateway.calls import Caller, Calls
from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.model import Event

if TYPE_CHECKING:
    from aai_gateway.events.hub import Fanout


class Source:
    """Notices `app`'s `event` from `start` to `stop`, handing each raw payload to `fanout.deliver`; `caller`
    is who subscribed first (a poll calls the app's tool as them)."""

    def __init__(self, calls: Calls, app: Descriptor, event: Event, fanout: Fanout, caller: Caller) -> None:
        self.calls = calls
        self.app = app
        self.event = event
        self.fanout = fanout
        self.when = expressions.compiled(event.when, f"{app.app_id} event {event.name} when") if event.when else None

    @classmethod
    def bound(cls, app: Descriptor, event: Event, filter: str | None) -> Event:
        """`event` as a waiter with `filter` listens for it (the same unless the source needs the filter's word,
        such as the resource an MCP resource update names); InvalidParams when it cannot be listened for so."""
        return event

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError

"""A read-only tool polled as an event, for apps that announce nothing.

The tool runs every `every` seconds through the normal call path (consent and the history apply) while
somebody waits. With `when` (a JMESPath query over the result) the event fires when the query turns from
false to true; without it, when the payload (the result, as the event's `payload` template shapes it)
differs from the last one. The first poll only sets where
things stand: a torrent already done when the wait began is no news.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aai_gateway.calls import Caller, Calls
from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.model import Event
from aai_gateway.errors import AaiError
from aai_gateway.events.occurrence import shaped
from aai_gateway.events.source import Source

if TYPE_CHECKING:
    from aai_gateway.events.hub import Fanout

log = logging.getLogger(__name__)


class PollSource(Source):
    def __init__(self, calls: Calls, app: Descriptor, event: Event, fanout: Fanout, caller: Caller) -> None:
        super().__init__(calls, app, event, fanout, caller)
        self.caller = replace(caller, step=f"poll for {event.name}")
        self.later = replace(self.caller, ask=None, relay=None)
        """The caller of the polls after the first: the request that started the source may be over by then."""
        self.tool = str(event.source["tool"])
        args = event.source.get("args")
        self.args: dict[str, Any] = dict(args) if isinstance(args, dict) else {}
        self.every = max(1.0, float(event.source.get("every") or 1))
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        first = await self.calls.call(self.app.app_id, self.tool, self.args, self.caller)
        self._task = asyncio.create_task(self._run(self._state(first)))

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _state(self, result: Any) -> Any:
        if self.when is None:  # what changes is what waiters would be given
            return shaped(self.event, result)
        try:
            return bool(self.when.search(result))
        except Exception as exc:
            log.debug("when of %s failed: %s", self.event.name, exc)
            return False

    async def _run(self, last: Any) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                result = await self.calls.call(self.app.app_id, self.tool, self.args, self.later)
            except AaiError as exc:
                log.info("poll of %s:%s for %s failed: %s", self.app.app_id, self.tool, self.event.name, exc.detail)
                continue
            state = self._state(result)
            fired = (state is True and last is False) if self.when is not None else state != last
            last = state
            if fired:
                self.fanout.deliver(result)

"""How many calls may run at once: the gateway's slots, and each app's share of them.

`Slots` counts like `asyncio.Semaphore`, and the calls that find none free wait in the order they came;
but a free slot is taken and given back without a coroutine. Every call takes two (its app's share, then
one of the gateway's), and a semaphore costs two coroutines to enter and one to leave: about 1.4 µs a
call, for limits that are almost never reached.
"""

from __future__ import annotations

import asyncio
from collections import deque
from contextlib import suppress


class Slots:
    def __init__(self, size: int) -> None:
        self._free = size
        self._waiting: deque[asyncio.Future[None]] = deque()

    def take(self) -> bool:
        """Take a free slot, unless none is free or calls wait for one (they come first)."""
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return True
        return False

    async def wait(self) -> None:
        """Wait for a slot, after the calls waiting already; the slot is this call's when it returns."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give()  # handed a slot just as the call was cancelled: the next one has it
            else:
                with suppress(ValueError):
                    self._waiting.remove(waiter)
            raise

    def give(self) -> None:
        """Give a slot back: to the call that has waited longest, else to the free ones."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1

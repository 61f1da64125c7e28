"""An asyncio event loop on a virtual clock, for tests of timeouts that must not take real time.

Whenever the loop would wait for its next timer with no I/O ready, its clock jumps to that timer
instead of sleeping. Deadlines, `anyio.sleep` and cancel scopes then fire in the same order and at
the same loop times as they would in real time, at once. A test module uses it with
`anyio_backend` returning `("asyncio", {"loop_factory": VirtualClockLoop})`.
"""

from __future__ import annotations

import asyncio
import selectors


class _JumpingSelector(selectors.DefaultSelector):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:  # no timer pending: only I/O (e.g. a worker thread's wake-up) can go on
            return super().select(None)
        ready = super().select(0)
        if not ready:
            self.now += timeout
        return ready


class VirtualClockLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._jumping = _JumpingSelector()
        super().__init__(self._jumping)

    def time(self) -> float:
        return self._jumping.now

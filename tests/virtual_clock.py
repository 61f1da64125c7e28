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


class _PatientSelector(_JumpingSelector):
    """Waits up to `GRACE` seconds of real time for I/O before jumping: replies from real processes (a DBus
    app) arrive within it, so their timeouts do not fire early."""

    GRACE = 0.05

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:
            return selectors.DefaultSelector.select(self, None)
        ready = selectors.DefaultSelector.select(self, min(timeout, self.GRACE))
        if not ready:
            self.now += timeout
        return ready


class PatientVirtualClockLoop(VirtualClockLoop):
    """`VirtualClockLoop` for tests that talk to real processes: the clock jumps only after a short real wait
    without I/O."""

    def __init__(self) -> None:
        self._jumping = _PatientSelector()
        asyncio.SelectorEventLoop.__init__(self, self._jumping)

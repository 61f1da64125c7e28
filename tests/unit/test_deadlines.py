"""The calls' time limits (`Deadlines.within`): what `asyncio.timeout` does, on one timer for all the calls."""

from __future__ import annotations

import asyncio

import pytest

from aai_gateway.deadlines import Deadlines


async def _limited(deadlines: Deadlines, seconds: float, work: float) -> str:
    async with deadlines.within(seconds):
        await asyncio.sleep(work)
    return "done"


def test_a_call_past_its_time_raises_timeout_error_and_the_others_go_on() -> None:
    async def main() -> tuple[object, ...]:
        deadlines = Deadlines()
        return await asyncio.gather(
            _limited(deadlines, 0.05, 10),
            _limited(deadlines, 5, 0.2),
            _limited(deadlines, 0.15, 10),
            return_exceptions=True,
        )

    first, second, third = asyncio.run(main())
    assert isinstance(first, TimeoutError)
    assert second == "done"
    assert isinstance(third, TimeoutError)


def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    async def main() -> None:
        deadlines = Deadlines()
        task = asyncio.create_task(_limited(deadlines, 5, 10))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_a_call_that_ends_in_time_leaves_its_task_as_it_was() -> None:
    async def main() -> None:
        deadlines = Deadlines()
        for _ in range(1000):
            assert await _limited(deadlines, 5, 0) == "done"
        task = asyncio.current_task()
        assert task is not None
        assert task.cancelling() == 0
        assert deadlines._due == {}, "nothing kept of the calls that ended"

    asyncio.run(main())


def test_one_timer_serves_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> int:
        loop = asyncio.get_running_loop()
        timers = 0
        call_at = loop.call_at

        def counted(*args: object, **named: object) -> asyncio.TimerHandle:
            nonlocal timers
            timers += 1
            return call_at(*args, **named)  # type: ignore[arg-type]

        monkeypatch.setattr(loop, "call_at", counted)
        deadlines = Deadlines()
        before = timers  # asyncio.sleep's own timers
        await asyncio.gather(*(_limited(deadlines, 30, 0) for _ in range(200)))
        return timers - before

    assert asyncio.run(main()) == 1


def test_limits_on_a_new_loop_start_afresh() -> None:
    deadlines = Deadlines()
    assert asyncio.run(_limited(deadlines, 5, 0)) == "done"
    with pytest.raises(TimeoutError):
        asyncio.run(_limited(deadlines, 0.05, 10))
    assert asyncio.run(_limited(deadlines, 5, 0)) == "done"


def test_a_limit_of_nothing_times_out_at_once() -> None:
    with pytest.raises(TimeoutError):
        asyncio.run(_limited(Deadlines(), 0, 10))

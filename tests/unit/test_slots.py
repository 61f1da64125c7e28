"""The slots calls take: no more than their number at once, the waiting served in the order they came, and
a call cancelled while it waits neither keeps a slot nor loses one."""

from __future__ import annotations

import asyncio

from aai_gateway.calls.slots import Slots


async def _held(slots: Slots, name: str, order: list[str], release: asyncio.Event) -> None:
    if not slots.take():
        await slots.wait()
    order.append(name)
    try:
        await release.wait()
    finally:
        slots.give()


def test_no_more_run_at_once_than_there_are_slots_and_the_waiting_go_in_turn() -> None:
    async def main() -> None:
        slots, release = Slots(2), asyncio.Event()
        order: list[str] = []
        tasks = [asyncio.create_task(_held(slots, f"c{i}", order, release)) for i in range(5)]
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert order == ["c0", "c1"], "two slots: two calls run, three wait"
        release.set()
        await asyncio.gather(*tasks)
        assert order == ["c0", "c1", "c2", "c3", "c4"]
        assert [slots.take(), slots.take(), slots.take()] == [True, True, False], "every slot came back, no more"

    asyncio.run(main())


async def _taken_and_awaited() -> tuple[Slots, asyncio.Task[None]]:
    """One slot, taken, and a call waiting for it."""
    slots = Slots(1)
    assert slots.take()
    waiting = asyncio.create_task(slots.wait())
    await asyncio.sleep(0)
    return slots, waiting


def test_a_free_slot_goes_to_a_waiting_call_before_a_new_one() -> None:
    async def main() -> None:
        slots, waiting = await _taken_and_awaited()
        slots.give()
        assert not slots.take(), "handed to the call that waited"
        await waiting
        slots.give()
        assert slots.take()

    asyncio.run(main())


def test_a_call_cancelled_while_it_waits_leaves_no_trace() -> None:
    async def main() -> None:
        slots, waiting = await _taken_and_awaited()
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        slots.give()
        assert slots.take(), "the slot is free again, not kept for the cancelled call"
        assert not slots.take()

    asyncio.run(main())


def test_a_slot_handed_to_a_call_cancelled_before_it_ran_goes_to_the_next() -> None:
    async def main() -> None:
        slots, first = await _taken_and_awaited()
        second = asyncio.create_task(slots.wait())
        await asyncio.sleep(0)
        slots.give()  # handed to the first ...
        first.cancel()  # ... which is cancelled before it resumes
        await asyncio.gather(first, return_exceptions=True)
        assert first.cancelled()
        await asyncio.wait_for(second, 1)
        assert not slots.take(), "the second call holds the one slot"
        slots.give()
        assert slots.take()

    asyncio.run(main())

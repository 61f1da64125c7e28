"""What recording a call costs: `Gateway.call` with the history committed before each answer, against
the same gateway with a history that keeps nothing; plus the store's own write latency and throughput.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.history_cost [--calls 2000]

The gateway calls fail argument validation on purpose (the cheapest full path through `Gateway.call`),
so the difference between the two rows is the history's cost alone.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from aai_gateway.config import load_settings
from aai_gateway.errors import InvalidParams
from aai_gateway.history import HistoryStore, Record
from aai_gateway.history.record import now
from aai_gateway.service import Caller, Gateway
from tests.support import TEST_APPS, install_descriptor

CALLER = Caller(name="bench", transport="cli")


class KeepNothing(HistoryStore):
    async def write(self, record: Record, *, alone: bool = False) -> None:
        return None


async def measure(call: Callable[[], Awaitable[object]], calls: int) -> list[float]:
    for _ in range(calls // 10):
        await call()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def row(name: str, times: list[float]) -> str:
    p50 = statistics.median(times)
    p99 = statistics.quantiles(times, n=100)[98]
    return f"{name:<44} p50 {p50:7.3f} ms   p99 {p99:7.3f} ms"


async def main(calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
        settings = load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"})
        recorded = Gateway(settings)
        unrecorded = Gateway(settings, history=KeepNothing(Path(tmp) / "unused.db"))

        def invalid(gateway: Gateway) -> Callable[[], Awaitable[object]]:
            async def call() -> object:
                try:
                    return await gateway.call("dev.aai.echo", "echo", {"txt": "x"}, CALLER)
                except InvalidParams:
                    return None

            return call

        with_history = await measure(invalid(recorded), calls)
        # The writer thread's work queued by those calls (moving the journal into the table at a checkpoint)
        # is done before the next row, so that it does not run on the other core during that row.
        await asyncio.to_thread(recorded.history.flush)
        without = await measure(invalid(unrecorded), calls)
        print(row("Gateway.call, history committed first", with_history))
        print(row("Gateway.call, no history", without))
        cost = statistics.median(with_history) - statistics.median(without)
        print(f"{'cost of recording (p50 difference)':<44} {cost:.3f} ms")

        store = recorded.history
        n = 0

        async def write() -> None:
            nonlocal n
            n += 1
            await store.write(
                Record(f"w{n}", now(), "bench", "cli", "dev.aai.echo", "echo", {"text": "x"}, "ok", 0.1, result='"x"')
            )

        print(row("HistoryStore.write alone, one at a time", await measure(write, calls)))
        await asyncio.to_thread(store.flush)
        started = time.perf_counter()
        await asyncio.gather(*(write() for _ in range(calls)))
        elapsed = time.perf_counter() - started
        print(f"{f'HistoryStore.write, {calls} at once':<44} {calls / elapsed:9.0f} records/s")
        store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    asyncio.run(main(parser.parse_args().calls))

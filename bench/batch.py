"""`aai:batch` against the same calls made one `aai:exec` after another, over stdio to the test echo app.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.batch [--rounds 5]

Two loads: ten 200 ms `sleep` calls (the batch should take one sleep, not ten), and a hundred `echo`
calls (the gateway's own cost per call, in a batch and one by one, beside direct dbus-fast calls
made in the same run). Each load is repeated `--rounds` times; the p50 and the spread are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from dbus_fast import Message
from dbus_fast.aio import MessageBus
from mcp import ClientSession

from bench.direct import echo
from tests.e2e.mcp_client import stdio_session
from tests.support import TEST_APPS, Bus, install_descriptor, running, start_app

SLEEPS = [{"app": "dev.aai.echo", "tool": "sleep", "args": {"seconds": 0.2}}] * 10
ECHOES = [{"app": "dev.aai.echo", "tool": "echo", "args": {"text": f"hello {i}"}} for i in range(100)]


async def timed(run: Callable[[], Awaitable[object]], rounds: int) -> list[float]:
    """Milliseconds of each of `rounds` runs, after one warm-up run."""
    await run()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await run()
        times.append((time.perf_counter() - started) * 1000)
    return times


def row(name: str, times: list[float], base: float | None = None, base_name: str = "") -> str:
    p50 = statistics.median(times)
    ratio = f"   {p50 / base:6.2f}x of {base_name}" if base else ""
    return f"{name:<36} p50 {p50:9.1f} ms   (min {min(times):8.1f}, max {max(times):8.1f}){ratio}"


async def batch(session: ClientSession, calls: list[dict[str, Any]], **options: Any) -> None:
    result = await session.call_tool("aai_batch", {"calls": calls, **options})
    report = result.structured_content
    assert isinstance(report, dict), result
    assert report["ok"] == len(calls), report


async def serial(session: ClientSession, calls: list[dict[str, Any]]) -> None:
    for call in calls:
        result = await session.call_tool("aai_exec", call)
        assert not result.is_error, result


async def direct_echoes(bus_address: str, rounds: int) -> tuple[list[float], list[float]]:
    """100 direct Echo calls one after another, and all at once, on one dbus-fast connection."""
    bus = await MessageBus(bus_address=bus_address).connect()

    def direct_echo(call: dict[str, Any]) -> Awaitable[Message | None]:
        return echo(bus, call["args"]["text"])

    async def one_by_one() -> None:
        for call in ECHOES:
            await direct_echo(call)

    async def at_once() -> None:
        await asyncio.gather(*(direct_echo(call) for call in ECHOES))

    try:
        return await timed(one_by_one, rounds), await timed(at_once, rounds)
    finally:
        bus.disconnect()


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        bus = Bus(work / "bus")
        try:
            with running(start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())):
                home = work / "home"
                install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
                (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}}))
                env = bus.env(HOME=str(home), AAI_PLATFORM="linux")
                direct_serial, direct_gathered = await direct_echoes(bus.address, rounds)
                print(f"{rounds} rounds each after one warm-up; maxConcurrentCalls 16 (the default)\n")
                async with stdio_session(env, work / "stdio.log") as session:
                    one_by_one = await timed(lambda: serial(session, SLEEPS), rounds)
                    batched = await timed(lambda: batch(session, SLEEPS), rounds)
                    print("ten 200 ms sleep calls:")
                    print(row("aai:exec one after another", one_by_one))
                    serial_p50 = statistics.median(one_by_one)
                    print(row("aai:batch (parallel)", batched, serial_p50, "serial"))
                    print(f"{'':<36} serial takes {serial_p50 / statistics.median(batched):.1f}x the batch's time\n")

                    exec_serial = await timed(lambda: serial(session, ECHOES), rounds)
                    batch_parallel = await timed(lambda: batch(session, ECHOES), rounds)
                    batch_serial = await timed(lambda: batch(session, ECHOES, parallel=False), rounds)
                base = statistics.median(exec_serial)
                print("a hundred echo calls:")
                print(row("direct dbus-fast, one by one", direct_serial))
                print(row("direct dbus-fast, all at once", direct_gathered))
                print(row("aai:exec one after another", exec_serial))
                print(row("aai:batch (parallel)", batch_parallel, base, "serial aai:exec"))
                print(row("aai:batch parallel: false", batch_serial, base, "serial aai:exec"))
                per_call = (statistics.median(batch_parallel) - statistics.median(direct_gathered)) / len(ECHOES)
                print(f"{'':<36} the parallel batch costs {per_call:.3f} ms per call over direct calls at once")
        finally:
            bus.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    asyncio.run(main(options.rounds))

"""Per-call latency of `aai:exec` to the test echo app over stdio and HTTP, against a direct dbus-fast call.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.exec_latency [--calls 2000]

Everything runs in this one process tree on a private DBus bus; the direct call is measured in the
same run, so the ratios are what to compare across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from dbus_fast import Message
from dbus_fast.aio import MessageBus

from tests.e2e.mcp_client import http_session, stdio_session, web_gateway
from tests.support import TEST_APPS, Bus, install_descriptor, running, start_app

ARGS = {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "hello"}}


async def throughput(call: Callable[[], Awaitable[object]], calls: int, in_flight: int = 16) -> float:
    """Calls per second with `in_flight` calls outstanding at all times."""
    remaining = calls

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return calls / (time.perf_counter() - started)


async def measure(call: Callable[[], Awaitable[object]], calls: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        await call()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def row(name: str, times: list[float], base: float | None) -> str:
    p50 = statistics.median(times)
    p99 = statistics.quantiles(times, n=100)[98]
    ratio = f"{p50 / base:5.2f}x" if base else "  1.00x"
    extra = f"  (+{p50 - base:.3f} ms over direct)" if base else ""
    return f"{name:<28} p50 {p50:7.3f} ms   p99 {p99:7.3f} ms   {ratio}{extra}"


async def direct(bus_address: str, calls: int, warmup: int) -> tuple[list[float], float]:
    bus = await MessageBus(bus_address=bus_address).connect()

    async def call() -> object:
        return await bus.call(
            Message(
                destination="dev.aai.Echo",
                path="/dev/aai/Echo",
                interface="dev.aai.Echo",
                member="Echo",
                signature="s",
                body=["hello"],
            )
        )

    try:
        return await measure(call, calls, warmup), await throughput(call, calls)
    finally:
        bus.disconnect()


async def main(calls: int, warmup: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        bus = Bus(work / "bus")
        try:
            with running(start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())):
                home = work / "home"
                install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
                env = bus.env(HOME=str(home), AAI_PLATFORM="linux")
                base_times, base_rate = await direct(bus.address, calls, warmup)
                base = statistics.median(base_times)
                rates = {"direct dbus-fast call": base_rate}
                print(f"{calls} calls each after {warmup} warm-up calls; echo of a 5-byte string\n")
                print(row("direct dbus-fast call", base_times, None))
                async with stdio_session(env, work / "stdio.log") as session:
                    times = await measure(lambda: session.call_tool("aai:exec", ARGS), calls, warmup)
                    rates["aai:exec over stdio"] = await throughput(lambda: session.call_tool("aai:exec", ARGS), calls)
                print(row("aai:exec over stdio", times, base))
                with web_gateway(env, work / "web.log") as url:
                    async with http_session(url) as session:
                        times = await measure(lambda: session.call_tool("aai:exec", ARGS), calls, warmup)
                        rates["aai:exec over HTTP"] = await throughput(
                            lambda: session.call_tool("aai:exec", ARGS), calls
                        )
                print(row("aai:exec over HTTP", times, base))
                print("\nwith 16 calls in flight on one connection or session:")
                for name, rate in rates.items():
                    print(f"{name:<28} {rate:8.0f} calls/s   {rate / base_rate:5.2f}x of direct")
        finally:
            bus.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.warmup))

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


async def direct(bus_address: str, calls: int, warmup: int) -> list[float]:
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
        return await measure(call, calls, warmup)
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
                base_times = await direct(bus.address, calls, warmup)
                base = statistics.median(base_times)
                print(f"{calls} calls each after {warmup} warm-up calls; echo of a 5-byte string\n")
                print(row("direct dbus-fast call", base_times, None))
                async with stdio_session(env, work / "stdio.log") as session:
                    times = await measure(lambda: session.call_tool("aai:exec", ARGS), calls, warmup)
                print(row("aai:exec over stdio", times, base))
                with web_gateway(env, work / "web.log") as url:
                    async with http_session(url) as session:
                        times = await measure(lambda: session.call_tool("aai:exec", ARGS), calls, warmup)
                print(row("aai:exec over HTTP", times, base))
        finally:
            bus.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.warmup))

"""Per-call latency of `aai:exec` to the test echo app over stdio and HTTP, against a direct dbus-fast call.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.exec_latency [--calls 2000] [--rounds 3] [--no-http]

Everything runs in this one process tree on a private DBus bus; the direct call is measured in the
same run, so the ratios are what to compare across machines. Over stdio the gateway is driven twice:
by a raw JSON-lines client (write requests, read answers by id: what the gateway itself costs) and by
the official MCP SDK client (what an SDK-based agent sees, the client's own overhead included).
Each row is measured `--rounds` times; the p50 shown is the median of the rounds, with their spread.

Beside it, in the same run: a bare JSON-lines relay with no features (bench/peers/relay.py: the wire and
the bus, nothing else) and the peer a user would write instead (bench/peers/sdk_echo.py: one MCP SDK
`MCPServer` for the app), over stdio and HTTP; the last lines give the gateway's ratios to each.

Over HTTP both servers are driven by the SDK client and by a raw one (bench/raw_http.py). With 16
calls in flight the SDK client's own process is the bottleneck: it spends ~0.86 ms of CPU a call on
the gateway and ~1.2 ms on the peer (the peer answers with event streams), more than either server,
so its rates compare the clients as much as the servers. The raw client's rows compare the servers.

Each gateway gets an AAI home of its own, as one agent's gateway has: gateways sharing a home
wake each other's file watchers with every log line and history commit (~17 us of CPU each per
call, measured), which `--shared-home` shows.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from functools import partial
from pathlib import Path

from dbus_fast.aio import MessageBus

from bench.direct import echo
from bench.raw_http import raw_http_session
from tests.e2e.mcp_client import http_session, stdio_session, web_gateway
from tests.e2e.raw_client import raw_session
from tests.support import TEST_APPS, Bus, echo_home, running, start_app

ARGS = {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "hello"}}
EXEC = ("aai_exec", ARGS)
RAW_EXEC = {"name": "aai_exec", "arguments": ARGS}
DIRECT = "direct dbus-fast call"
RELAY = "bare relay stdio, raw"
GATEWAY = "aai:exec stdio, raw"
PEER = "SDK peer stdio, raw"
WEB = "aai:exec HTTP, SDK client"
WEB_PEER = "SDK peer HTTP, SDK client"
WEB_RAW = "aai:exec HTTP, raw"
WEB_PEER_RAW = "SDK peer HTTP, raw"
RAW_CALLER = "bench-raw"
IN_FLIGHT = 16

Call = Callable[[], Awaitable[object]]


async def throughput(call: Call, calls: int, in_flight: int = IN_FLIGHT) -> tuple[float, float]:
    """Calls per second with `in_flight` calls outstanding at all times, and this process's CPU a call
    in microseconds (the client's own cost: a client near a whole core's worth is what limits the rate)."""
    remaining = calls

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call()

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return calls / (time.perf_counter() - started), (time.process_time() - cpu) * 1e6 / calls


async def measure(call: Call, calls: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        await call()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1000)
    return times


class Figures:
    """Each row's p50 and 16-in-flight rate per round."""

    def __init__(self) -> None:
        self.p50: dict[str, list[float]] = {}
        self.p99: dict[str, list[float]] = {}
        self.rates: dict[str, list[float]] = {}
        self.client_cpu: dict[str, list[float]] = {}

    async def take(self, name: str, call: Call, calls: int, warmup: int) -> None:
        times = await measure(call, calls, warmup)
        self.p50.setdefault(name, []).append(statistics.median(times))
        self.p99.setdefault(name, []).append(statistics.quantiles(times, n=100)[98])
        rate, cpu = await throughput(call, calls)
        self.rates.setdefault(name, []).append(rate)
        self.client_cpu.setdefault(name, []).append(cpu)

    def report(self) -> str:
        base = statistics.median(self.p50[DIRECT])
        base_rate = statistics.median(self.rates[DIRECT])
        lines = [f"{'':<26} {'p50 ms':>8} {'spread':>15} {'p99 ms':>8} {'ratio':>7} {'over direct':>12}"]
        for name, p50s in self.p50.items():
            p50 = statistics.median(p50s)
            spread = f"{min(p50s):.3f}-{max(p50s):.3f}"
            p99 = statistics.median(self.p99[name])
            over = f"+{p50 - base:.3f} ms" if name != DIRECT else ""
            lines.append(f"{name:<26} {p50:8.3f} {spread:>15} {p99:8.3f} {p50 / base:6.2f}x {over:>12}")
        lines.append(f"\nwith {IN_FLIGHT} calls in flight on one connection or session:")
        for name, rates in self.rates.items():
            rate = statistics.median(rates)
            spread = f"{min(rates):.0f}-{max(rates):.0f}"
            cpu = statistics.median(self.client_cpu[name])
            lines.append(
                f"{name:<26} {rate:8.0f} calls/s {spread:>13}   {rate / base_rate:5.2f}x of direct"
                f"   client CPU {cpu:5.0f} us a call"
            )
        lines.append("\nthe gateway against the bare relay and the SDK peer, round by round:")
        lines.append(f"  stdio p50 over direct: {self._each(GATEWAY, DIRECT, self.p50, over=True)} ms")
        lines.append(f"  stdio, {IN_FLIGHT} in flight, over the relay: {self._each(GATEWAY, RELAY, self.rates)}x")
        lines.append(f"  stdio, {IN_FLIGHT} in flight, over the SDK peer: {self._each(GATEWAY, PEER, self.rates)}x")
        if WEB in self.rates and WEB_PEER in self.rates:
            lines.append(f"  HTTP, {IN_FLIGHT} in flight, over the SDK peer: {self._each(WEB, WEB_PEER, self.rates)}x")
        if WEB_RAW in self.rates and WEB_PEER_RAW in self.rates:
            each = self._each(WEB_RAW, WEB_PEER_RAW, self.rates)
            lines.append(f"  HTTP, {IN_FLIGHT} in flight, raw client, over the SDK peer: {each}x")
        return "\n".join(lines)

    @staticmethod
    def _each(name: str, base: str, figures: dict[str, list[float]], *, over: bool = False) -> str:
        """The figure of `name` against that of `base` in each round (a difference or a ratio)."""
        pairs = zip(figures.get(name, []), figures.get(base, []), strict=False)
        return ", ".join(f"{a - b:+.3f}" if over else f"{a / b:.2f}" for a, b in pairs)


def peer(script: str, *args: str) -> list[str]:
    """The command that runs a peer of `bench/peers` (from the repository root, as the benchmarks are)."""
    return [sys.executable, "-m", f"bench.peers.{script.removesuffix('.py')}", *args]


@contextmanager
def http_peer(env: dict[str, str], stderr: Path) -> Iterator[str]:
    """The SDK peer served over streamable HTTP; yields its MCP URL once it accepts connections."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with stderr.open("a") as errlog:
        proc = subprocess.Popen(peer("sdk_echo.py", "http", str(port)), env=env, stderr=errlog, stdout=errlog)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, f"the SDK peer exited: {stderr.read_text()}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


async def main(calls: int, warmup: int, rounds: int, http: bool, shared_home: bool) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        bus = Bus(work / "bus")
        try:
            with running(start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())):

                def env_of(name: str) -> dict[str, str]:
                    home = work / ("home" if shared_home else f"home-{name}")
                    if not home.exists():
                        echo_home(home, RAW_CALLER)  # a raw client cannot be asked
                    return bus.env(HOME=str(home), AAI_PLATFORM="linux")

                figures = Figures()
                direct = await MessageBus(bus_address=bus.address).connect()

                direct_echo = partial(echo, direct)
                async with AsyncExitStack() as sessions:
                    raw = await sessions.enter_async_context(raw_session(env_of("raw"), work / "raw.log", RAW_CALLER))
                    sdk = await sessions.enter_async_context(stdio_session(env_of("sdk"), work / "stdio.log"))
                    web = web_raw = None
                    if http:
                        url = sessions.enter_context(web_gateway(env_of("web"), work / "web.log"))
                        web = await sessions.enter_async_context(http_session(url))
                        web_raw = await sessions.enter_async_context(raw_http_session(url, RAW_CALLER))
                    relay = await sessions.enter_async_context(
                        raw_session(bus.env(), work / "relay.log", RAW_CALLER, command=peer("relay.py"))
                    )
                    sdk_peer = await sessions.enter_async_context(
                        raw_session(bus.env(), work / "peer.log", RAW_CALLER, command=peer("sdk_echo.py", "stdio"))
                    )
                    web_peer = web_peer_raw = None
                    if http:
                        peer_url = sessions.enter_context(http_peer(bus.env(), work / "peer-http.log"))
                        web_peer = await sessions.enter_async_context(http_session(peer_url))
                        web_peer_raw = await sessions.enter_async_context(raw_http_session(peer_url, RAW_CALLER))
                    raw_exec = partial(raw.request, "tools/call", RAW_EXEC)
                    for _ in range(rounds):
                        await figures.take(DIRECT, direct_echo, calls, warmup)
                        await figures.take(RELAY, partial(relay.request, "tools/call", RAW_EXEC), calls, warmup)
                        await figures.take(GATEWAY, raw_exec, calls, warmup)
                        await figures.take(PEER, partial(sdk_peer.request, "tools/call", RAW_EXEC), calls, warmup)
                        await figures.take("aai:exec stdio, SDK client", partial(sdk.call_tool, *EXEC), calls, warmup)
                        if web is not None and web_peer is not None:
                            await figures.take(WEB, partial(web.call_tool, *EXEC), calls, warmup)
                            await figures.take(WEB_PEER, partial(web_peer.call_tool, *EXEC), calls, warmup)
                        if web_raw is not None and web_peer_raw is not None:
                            await figures.take(WEB_RAW, partial(web_raw.request, "tools/call", RAW_EXEC), calls, warmup)
                            raw_peer = partial(web_peer_raw.request, "tools/call", RAW_EXEC)
                            await figures.take(WEB_PEER_RAW, raw_peer, calls, warmup)
                direct.disconnect()
                print(f"{rounds} rounds of {calls} calls each after {warmup} warm-up calls; echo of a 5-byte string\n")
                print(figures.report())
        finally:
            bus.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-http", dest="http", action="store_false", help="leave out streamable HTTP")
    parser.add_argument("--shared-home", action="store_true", help="one AAI home for the three gateways")
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.warmup, options.rounds, options.http, options.shared_home))

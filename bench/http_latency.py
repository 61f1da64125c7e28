"""Per-call latency of `aai:exec` over streamable HTTP to the test echo app, against a direct dbus-fast call.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.http_latency [--calls 2000] [--rounds 3]

Two clients talk to the same `aai-gateway --web`: the MCP SDK's (what an agent would use, with its
own per-call cost) and a plain httpx2 client posting JSON-RPC with the session id kept, which shows
what the gateway itself costs. The direct call is measured in the same run; each round measures all
three in turn, so the spread between rounds shows how noisy the machine was.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from dbus_fast.aio import MessageBus

from bench.direct import echo
from tests.e2e.mcp_client import http_session, web_gateway
from tests.support import TEST_APPS, Bus, install_descriptor, running, start_app

ARGS = {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "hello"}}
CALLER = "bench-raw"
PROTOCOL = "2025-06-18"


async def measure(call: Callable[[], Awaitable[object]], calls: int, warmup: int) -> list[float]:
    """Milliseconds of each of `calls` calls made one after the other, after `warmup` unmeasured ones."""
    for _ in range(warmup):
        await call()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1000)
    return times


async def direct(bus_address: str, calls: int, warmup: int) -> list[float]:
    bus = await MessageBus(bus_address=bus_address).connect()
    try:
        return await measure(lambda: echo(bus), calls, warmup)
    finally:
        bus.disconnect()


@asynccontextmanager
async def raw_session(url: str) -> AsyncIterator[Any]:
    """A JSON-RPC caller over one kept-alive httpx2 connection, with the MCP session id the server gave."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    ids = itertools.count(1)
    async with httpx2.AsyncClient(headers=headers, timeout=30) as client:

        async def post(method: str, params: dict[str, Any] | None = None) -> Any:
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
            if params is not None:
                message["params"] = params
            if not method.startswith("notifications/"):
                message["id"] = next(ids)
            response = await client.post(url, content=json.dumps(message))
            response.raise_for_status()
            return response.json() if response.content else None

        hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": CALLER, "version": "1"}}
        answer = await client.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
        answer.raise_for_status()
        client.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
        client.headers["mcp-protocol-version"] = answer.json()["result"]["protocolVersion"]
        await post("notifications/initialized")

        async def call() -> Any:
            reply = await post("tools/call", {"name": "aai_exec", "arguments": ARGS})
            if "result" not in reply or reply["result"].get("isError"):
                raise RuntimeError(f"aai:exec failed: {reply}")
            return reply

        yield call


def summary(name: str, p50s: list[float], base: list[float] | None) -> str:
    """A line of figures; against `base`, the ratio and excess are taken round by round, then their median."""
    p50 = statistics.median(p50s)
    spread = f"{min(p50s):.3f}-{max(p50s):.3f}"
    extra = ""
    if base:
        ratio = statistics.median(p / b for p, b in zip(p50s, base, strict=True))
        over = statistics.median(p - b for p, b in zip(p50s, base, strict=True))
        extra = f"   {ratio:5.2f}x   +{over:.3f} ms over direct"
    return f"{name:<30} p50 {p50:7.3f} ms   (rounds {spread}){extra}"


async def main(calls: int, warmup: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        bus = Bus(work / "bus")
        try:
            with running(start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())):
                home = work / "home"
                install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
                rule = {"caller": CALLER, "app": "dev.aai.echo", "decision": "allow"}
                (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"rules": [rule]}}))
                env = bus.env(HOME=str(home), AAI_PLATFORM="linux")
                figures: dict[str, list[float]] = {"direct": [], "sdk": [], "raw": []}
                with web_gateway(env, work / "web.log") as url:
                    async with http_session(url) as session, raw_session(url) as raw:
                        for _ in range(rounds):
                            figures["direct"].append(statistics.median(await direct(bus.address, calls, warmup)))
                            times = await measure(lambda: session.call_tool("aai_exec", ARGS), calls, warmup)
                            figures["sdk"].append(statistics.median(times))
                            figures["raw"].append(statistics.median(await measure(raw, calls, warmup)))
                base = figures["direct"]
                print(f"{rounds} rounds of {calls} calls each after {warmup} warm-up calls; echo of a 5-byte string\n")
                print(summary("direct dbus-fast call", figures["direct"], None))
                print(summary("aai:exec, MCP SDK client", figures["sdk"], base))
                print(summary("aai:exec, raw httpx2 JSON-RPC", figures["raw"], base))
        finally:
            bus.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.warmup, options.rounds))

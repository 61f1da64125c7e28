"""Where a call's CPU goes in the gateway: `aai_exec` to the DBus echo app on the fast path, over stdio and HTTP.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.breakdown [--calls 3000] [--no-http]

The gateway runs as usual (`--mcp`, then `--web`) but through this module's probe, which wraps the functions of
each phase with a CPU-time counter of the gateway's main thread (`time.thread_time`, so time spent waiting for
the app or the client counts nowhere): reading the request off the wire, finding the app and tool, checking
the arguments, consent, the executor (the DBus call), recording in the history, logging, and writing the
answer. The gateway's whole CPU per call (every thread, from /proc) is taken around the same calls; what no
phase holds is the event loop, the transport and the glue between the phases. Each counter costs about a
microsecond a call itself. Calls are made one after the other by a raw client (no SDK in this process).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.exec_latency import RAW_CALLER, RAW_EXEC
from tests.e2e.raw_client import raw_session
from tests.support import TEST_APPS, Bus, echo_home, running, start_app

OUT = "AAI_BREAKDOWN"
"""The file the probe writes its counters to when sent SIGUSR1."""
PHASES: dict[str, list[tuple[str, str, str]]] = {
    "wire in": [
        ("aai_gateway.mcp.wire.calls", "FastCalls", "take"),
        ("aai_gateway.mcp.wire.http", "HttpCalls", "serve"),
    ],
    "lookup": [  # a call of an installed app's tool finds it kept (Calls._route) once it was looked up
        ("aai_gateway.calls.apps", "Apps", "resolve"),
        ("aai_gateway.calls.apps", "Apps", "tool"),
        ("aai_gateway.calls.servers", "Servers", "live"),
    ],
    "argument check": [
        ("aai_gateway.descriptor.argument_check", "ArgumentCheck", "passes"),
        ("aai_gateway.descriptor.argument_check", "ArgumentCheck", "run"),
        ("aai_gateway.calls.runner", "", "_check_text"),
    ],
    "consent": [("aai_gateway.consent.gate", "ConsentGate", "check")],
    "executor (DBus)": [("aai_gateway.executors.dbus", "DbusExecutor", "execute")],
    "recording": [
        ("aai_gateway.history.recorder", "Recorder", "begin"),
        ("aai_gateway.history.recorder", "Recorder", "ok"),
        ("aai_gateway.history.recorder", "Recorder", "prepare"),  # run while the app works on the call
    ],
    "logging": [("logging", "Logger", "handle"), ("aai_gateway.logs", "", "_write_waiting")],
    "answer": [
        ("aai_gateway.mcp.wire.calls", "", "_wire"),
        ("aai_gateway.mcp.wire.jsonrpc", "", "encoded"),
        ("aai_gateway.mcp.pipes", "PipeWriter", "send_line"),
        ("aai_gateway.mcp.wire.http", "", "_respond"),
    ],
}
"""Each phase's functions: module, class ('' for a module's function), name. Nested ones count once, in the
outer phase (`serve` over HTTP holds the whole call, so its inner phases are taken off it)."""


def probe() -> None:
    """Run the gateway with the phase counters in place; write them to $AAI_BREAKDOWN when it exits."""
    import importlib  # noqa: PLC0415

    spent: defaultdict[str, float] = defaultdict(float)

    def counted(phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        if asyncio.iscoroutinefunction(function):

            @functools.wraps(function)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                started = time.thread_time()
                try:
                    return await function(*args, **kwargs)
                finally:
                    spent[phase] += time.thread_time() - started

            return timed_async

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[phase] += time.thread_time() - started

        return timed

    for phase, places in PHASES.items():
        for module_name, owner_name, name in places:
            module = importlib.import_module(module_name)
            owner = getattr(module, owner_name) if owner_name else module
            if hasattr(owner, name):  # a place an older gateway (the "before" of a comparison) may not have
                setattr(owner, name, counted(phase, getattr(owner, name)))

    def write(*_: object) -> None:
        Path(os.environ[OUT]).write_text(json.dumps(dict(spent)))

    signal.signal(signal.SIGUSR1, write)
    from aai_gateway.cli.root import main  # noqa: PLC0415

    sys.argv = ["aai-gateway", *sys.argv[2:]]
    main()


def cpu_of(pid: int) -> float:
    """Seconds of CPU of every thread of `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(transport: str, spent: dict[str, float], whole: float, calls: int) -> str:
    each = {phase: spent.get(phase, 0.0) * 1e6 / calls for phase in PHASES}
    if transport == "HTTP":  # `serve` holds the whole call but its log line: its own share is what is left
        inner = sum(v for k, v in each.items() if k not in ("wire in", "logging"))
        each["wire in"] = max(0.0, each["wire in"] - inner)
    total = whole * 1e6 / calls
    lines = [f"{transport}: {total:.0f} us of gateway CPU a call (all threads), by phase (main thread):"]
    for phase, micros in each.items():
        lines.append(f"  {phase:<18} {micros:6.1f} us  {100 * micros / total:4.0f} %")
    rest = total - sum(each.values())
    lines.append(f"  {'loop, transport, glue':<18} {rest:6.1f} us  {100 * rest / total:4.0f} %")
    return "\n".join(lines)


@contextmanager
def probed_web(env: dict[str, str], stderr: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    with stderr.open("a") as errlog:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.breakdown", "--probe", "--web", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            env=env,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            found = [line for line in stderr.read_text().splitlines() if "MCP over HTTP at " in line]
            if found:
                break
            assert proc.poll() is None, stderr.read_text()
            assert time.monotonic() < deadline, stderr.read_text()
            time.sleep(0.05)
        yield proc, found[0].split("MCP over HTTP at ", 1)[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(10)


async def measured(pid: int, call: Callable[[], Awaitable[object]], calls: int) -> float:
    """Seconds of the gateway's CPU over `calls` calls made one after the other."""
    before = cpu_of(pid)
    for _ in range(calls):
        await call()
    return cpu_of(pid) - before


async def main(calls: int, http: bool) -> None:
    from bench.http_latency import raw_session as http_raw_session  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        bus = Bus(work / "bus")
        try:
            with running(start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())):
                home = work / "home"
                echo_home(home, RAW_CALLER)
                counters = work / "stdio.json"
                env = bus.env(HOME=str(home), AAI_PLATFORM="linux", **{OUT: str(counters)})
                command = [sys.executable, "-m", "bench.breakdown", "--probe", "--mcp"]
                async with raw_session(env, work / "stdio.log", RAW_CALLER, command=command) as raw:
                    whole = await measured(raw.proc.pid, functools.partial(raw.request, "tools/call", RAW_EXEC), calls)
                    print(report("stdio", _counters_of(raw.proc.pid, counters), whole, calls))
                if http:
                    counters = work / "http.json"
                    env[OUT] = str(counters)
                    with probed_web(env, work / "web.log") as (proc, url):
                        async with http_raw_session(url) as post:
                            whole = await measured(proc.pid, post, calls)
                        print()
                        print(report("HTTP", _counters_of(proc.pid, counters), whole, calls))
        finally:
            bus.stop()


def _counters_of(pid: int, path: Path) -> dict[str, float]:
    """The probe's counters, asked for now."""
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    counted: dict[str, float] = json.loads(path.read_text())
    return counted


if __name__ == "__main__":
    if sys.argv[1:2] == ["--probe"]:
        probe()
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--calls", type=int, default=3000)
        parser.add_argument("--no-http", dest="http", action="store_false")
        options = parser.parse_args()
        asyncio.run(main(options.calls, options.http))

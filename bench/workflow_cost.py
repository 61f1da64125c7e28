"""`bench.workflow`'s part 2: what the gateway itself adds to a 10-step plan, on the test echo app.

The plan chains `add` and `echo`: each step reads the previous step's result (`add` → `echo` of it as text
→ `add` of that text as a number ...). The same ten calls are made as ten `aai_exec` requests one after
another (the client building each one's arguments from the last answer) and directly over dbus-fast;
all three through the raw JSON-lines client, in the same run, on one gateway.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from dbus_fast.aio import MessageBus

from bench.direct import add, echo
from tests.e2e.raw_client import RawClient, raw_session
from tests.support import TEST_APPS, Bus, echo_home, running, start_app

APP = "dev.aai.echo"
STEPS = 10
CALLER = "bench-raw"
TARGET_SLACK = 0.5
"""ms a 10-step plan may cost beyond ten times the per-call overhead of aai_exec."""
DIRECT = "10 direct dbus-fast calls"
EXEC = "10 aai_exec one by one"
PLAN = "one 10-step aai_run"


def plan() -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"id": "s0", "app": APP, "tool": "add", "args": {"a": 1}}]
    for i in range(1, STEPS):
        previous = f"steps.s{i - 1}.result"
        if i % 2:
            steps.append({"id": f"s{i}", "app": APP, "tool": "echo", "args": {"text": f"${{to_string({previous})}}"}})
        else:
            steps.append({"id": f"s{i}", "app": APP, "tool": "add", "args": {"a": f"${{to_number({previous})}}"}})
    return {"steps": steps, "output": f"${{steps.s{STEPS - 1}.result}}"}


EXPECTED = 1 + STEPS // 2
"""Each `add` adds 1 to the 1 the series starts with; the last step, an echo, gives it as text."""


async def direct_series(bus: MessageBus) -> str:
    value: Any = 1
    for i in range(STEPS):
        if i % 2:
            reply = await echo(bus, str(value))
            assert reply is not None
            value = reply.body[0]
        else:
            value = await add(bus, int(value))
    return str(value)


async def exec_series(client: RawClient) -> str:
    value: Any = 1
    for i in range(STEPS):
        call = (
            {"app": APP, "tool": "echo", "args": {"text": str(value)}}
            if i % 2
            else {"app": APP, "tool": "add", "args": {"a": int(value)}}
        )
        result = await client.request("tools/call", {"name": "aai_exec", "arguments": call})
        value = result["content"][0]["text"]
    return str(value)


async def plan_run(client: RawClient, raw: dict[str, Any]) -> str:
    result = await client.request("tools/call", {"name": "aai_run", "arguments": raw})
    output = result["structuredContent"]["output"]
    return str(output)


async def p50(run: Callable[[], Awaitable[str]], count: int, warmup: int) -> float:
    for _ in range(warmup):
        got = await run()
        if got != str(EXPECTED):
            raise RuntimeError(f"the series gave {got!r}, not {EXPECTED}")
    times = []
    for _ in range(count):
        started = time.perf_counter()
        await run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def plan_cost(work: Path, rounds: int, plans: int) -> None:
    print(f"Part 2: the gateway's own cost of a {STEPS}-step plan, raw JSON-lines client, test echo app\n")
    if not (TEST_APPS / "echo_service.py").exists():
        print("skipped: the test echo app is not in this checkout")
        return
    work.mkdir(parents=True)
    bus = Bus(work / "bus")
    try:
        with running(start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())):
            home = work / "home"
            echo_home(home, CALLER)
            env = bus.env(HOME=str(home), AAI_PLATFORM="linux")
            direct = await MessageBus(bus_address=bus.address).connect()
            try:
                async with asyncio.timeout(60 + 600 * rounds), raw_session(env, work / "raw.log", CALLER) as client:
                    raw = plan()
                    p50s: dict[str, list[float]] = {DIRECT: [], EXEC: [], PLAN: []}
                    cpu: dict[str, list[float]] = {EXEC: [], PLAN: []}
                    pid = client.proc.pid
                    for _ in range(rounds):
                        p50s[DIRECT].append(await p50(lambda: direct_series(direct), plans, plans // 10))
                        used = cpu_ms(pid)
                        p50s[EXEC].append(await p50(lambda: exec_series(client), plans, plans // 10))
                        cpu[EXEC].append((cpu_ms(pid) - used) / (plans + plans // 10))
                        used = cpu_ms(pid)
                        p50s[PLAN].append(await p50(lambda: plan_run(client, raw), plans, plans // 10))
                        cpu[PLAN].append((cpu_ms(pid) - used) / (plans + plans // 10))
            finally:
                direct.disconnect()
        print(report(p50s, rounds, plans))
        if all(cpu[EXEC]):
            exec_cpu, plan_cpu = statistics.median(cpu[EXEC]), statistics.median(cpu[PLAN])
            print(
                f"the gateway's CPU time (all its threads), median of the rounds: {exec_cpu:.3f} ms per ten aai_exec,"
                f" {plan_cpu:.3f} ms per plan ({plan_cpu / exec_cpu:.2f}x)"
            )
    finally:
        bus.stop()


def cpu_ms(pid: int) -> float:
    """User and system CPU time of process `pid` so far, in ms, from /proc (0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def report(p50s: dict[str, list[float]], rounds: int, plans: int) -> str:
    lines = [
        f"{rounds} rounds of {plans} series each after {plans // 10} warm-up ones;"
        " p50 of each round, median of the rounds\n"
    ]
    lines.append(f"{'':<26} {'p50 ms':>8} {'spread':>15} {'per call ms':>12}")
    median = {name: statistics.median(values) for name, values in p50s.items()}
    for name, values in p50s.items():
        spread = f"{min(values):.3f}-{max(values):.3f}"
        lines.append(f"{name:<26} {median[name]:8.3f} {spread:>15} {median[name] / STEPS:12.3f}")
    per_call = (median[EXEC] - median[DIRECT]) / STEPS
    plan_over = median[PLAN] - median[DIRECT]
    target = STEPS * per_call + TARGET_SLACK
    lines.append("")
    lines.append(f"aai_exec's overhead per call over the direct call:   {per_call:.3f} ms")
    lines.append(f"the plan's overhead per step over the direct call:   {plan_over / STEPS:.3f} ms")
    lines.append(
        f"the plan's overhead in all: {plan_over:.3f} ms;"
        f" target <= {STEPS} x {per_call:.3f} + {TARGET_SLACK} = {target:.3f} ms"
    )
    verdict = "meets" if plan_over <= target else f"misses (by {plan_over - target:.3f} ms)"
    lines.append(
        f"the plan {verdict} the target; it takes {median[PLAN] / median[EXEC]:.2f}x the time of the ten aai_exec"
    )
    return "\n".join(lines)

"""Events: from a DBus signal to a triggered workflow's first step, and what a gateway waiting on many
triggers costs while nothing happens.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.events [--signals 30] [--idle 10]

Everything runs on a private DBus bus: the test echo app, and a connection of the bench owning
`dev.aai.Storm` that sends `Tick` signals. The installed `aai-gateway serve` runs the triggers.

1. Latency: a saved workflow, approved, starts on each `tick` and its first step calls the echo app. For
   each signal the time from sending it to its step's call (as the history records the call's start)
   is taken; one signal a second (the trigger's `maxPerMinute` is 60). p50 and p99.
2. Idle: `serve` with 50 triggered workflows on the app's event (50 subscriptions, each with its own
   filter) and 10 on timers (`every: 1h`), against a `serve` with none, in the same run: CPU seconds
   used over `--idle` seconds of nothing happening (idle means asleep: near zero), and resident memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dbus_fast import Message, NameFlag
from dbus_fast.aio import MessageBus

from aai_gateway.config import load_settings
from aai_gateway.history import HISTORY_FILE, HistoryStore
from aai_gateway.service import Gateway
from aai_gateway.workflows.triggers import tools_of
from tests.e2e.test_events import NAME, PATH, STORM
from tests.support import TEST_APPS, Bus, gateway_command, install_descriptor, running, start_app, wait_until


def workflow(on: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "bench",
        "on": [on],
        "steps": [{"id": "say", "app": "dev.aai.echo", "tool": "echo", "args": {"text": "tick ${event.payload.n}"}}],
    }


def home(root: Path, bus: Bus, workflows: dict[str, dict[str, Any]]) -> dict[str, str]:
    env = {
        "HOME": str(root),
        "DBUS_SESSION_BUS_ADDRESS": bus.address,
        "AAI_PLATFORM": "linux",
        "PATH": os.environ["PATH"],
    }
    (root / ".aai" / "dev.aai.storm").mkdir(parents=True)
    (root / ".aai" / "dev.aai.storm" / "aai.json").write_text(json.dumps(STORM))
    install_descriptor(root / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    rules = [{"app": "dev.aai.echo", "decision": "allow"}]
    (root / ".aai" / "config.json").write_text(json.dumps({"consent": {"rules": rules}, "httpPort": 0}))
    folder = root / ".aai" / "workflows"
    folder.mkdir()
    for workflow_id, doc in workflows.items():
        (folder / f"{workflow_id}.json").write_text(json.dumps(doc))
    gateway = Gateway(load_settings(env))
    for saved in gateway.shelf.workflows.values():
        gateway.approvals.approve(saved, tools_of(saved, gateway.static_tool), source="bench")
    return env


def serve(env: dict[str, str], log: Path, triggers: bool = True) -> subprocess.Popen[bytes]:
    with log.open("w") as out:
        proc = subprocess.Popen([gateway_command(), "serve", "--port", "0"], env=env, stdout=out, stderr=out)
    said = "starts on" if triggers else "MCP over HTTP at"
    try:
        wait_until(lambda: said in log.read_text() or proc.poll() is not None, 60, "serve to start")
    except TimeoutError:
        stop(proc)
        raise
    if proc.poll() is not None:
        sys.exit(f"aai-gateway serve exited: {log.read_text()}")
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024


async def latency(bus: Bus, work: Path, signals: int) -> list[float]:
    env = home(
        work / "latency", bus, {"on-tick": workflow({"app": "dev.aai.storm", "event": "tick", "maxPerMinute": 60})}
    )
    proc = serve(env, work / "latency.log")
    emitter = await MessageBus(bus_address=bus.address).connect()
    await emitter.request_name(NAME, NameFlag.DO_NOT_QUEUE)
    sent: dict[int, float] = {}
    try:
        await asyncio.sleep(1.0)
        for n in range(signals):
            sent[n] = time.time()
            await emitter.send(Message.new_signal(PATH, NAME, "Tick", "us", [n, ""]))
            await asyncio.sleep(1.05)
        await asyncio.sleep(2.0)
    finally:
        emitter.disconnect()
        stop(proc)
    store = HistoryStore(work / "latency" / ".aai" / HISTORY_FILE, 30)
    took: list[float] = []
    for record in store.query(limit=10 * signals):
        if record.tool == "echo" and record.parent and isinstance(record.args, dict):
            n = int(str(record.args.get("text", "tick -1")).split()[-1])
            if n in sent:
                took.append((record.time.timestamp() - sent[n]) * 1000)
    await store.aclose()
    return took


def idle(bus: Bus, work: Path, name: str, workflows: dict[str, dict[str, Any]], seconds: float) -> tuple[float, float]:
    env = home(work / name, bus, workflows)
    proc = serve(env, work / f"{name}.log", triggers=bool(workflows))
    try:
        time.sleep(3.0)
        before = cpu_seconds(proc.pid)
        time.sleep(seconds)
        return cpu_seconds(proc.pid) - before, rss_mb(proc.pid)
    finally:
        stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--signals", type=int, default=30)
    parser.add_argument("--idle", type=float, default=10.0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aai-bench-events-") as folder:
        work = Path(folder)
        bus = Bus(work / "bus")
        try:
            with running(start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())):
                took = asyncio.run(latency(bus, work, options.signals))
                many = {
                    f"tick-{i}": workflow({"app": "dev.aai.storm", "event": "tick", "filter": f"n == `{1000 + i}`"})
                    for i in range(50)
                }
                many |= {f"timer-{i}": workflow({"every": "1h"}) for i in range(10)}
                none_cpu, none_rss = idle(bus, work, "none", {}, options.idle)
                many_cpu, many_rss = idle(bus, work, "many", many, options.idle)
        finally:
            bus.stop()
    print(f"signal → triggered workflow's first step, {len(took)} of {options.signals} signals")
    if took:
        ordered = sorted(took)
        p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
        print(f"  p50 {statistics.median(ordered):7.2f} ms   p99 {p99:7.2f} ms   min {ordered[0]:.2f} ms")
    print(f"idle over {options.idle:g} s (serve, nothing happening)")
    print(f"  no triggers                   CPU {none_cpu * 1000:7.1f} ms   RSS {none_rss:6.1f} MB")
    print(f"  50 subscriptions + 10 timers  CPU {many_cpu * 1000:7.1f} ms   RSS {many_rss:6.1f} MB")
    cpu, rss = (many_cpu - none_cpu) * 1000, many_rss - none_rss
    print(f"  difference                    CPU {cpu:+7.1f} ms   RSS {rss:+6.1f} MB")


if __name__ == "__main__":
    main()

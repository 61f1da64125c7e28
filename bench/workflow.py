"""Multi-app tasks done as an agent does them today (a guide, then one `aai_exec` per operation, each read
before the next) against one `aai_run` plan; and the gateway's own cost of a 10-step plan over direct calls.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.workflow [--rounds 5] [--plans 300]

Part 1 drives real apps of the library through the installed `aai-gateway` over stdio with the official MCP
SDK client: mpv (with mpv-mpris) and VLC, dunst on a private X display, upowerd and power-profiles-daemon
on a private system bus, transmission-daemon on a loopback port, all started here and stopped by process
id at the end; a task whose apps are not installed is skipped with the reason. For each task and way it
prints the requests sent, the bytes the agent reads (the JSON of every tool result it receives, as the SDK
client got it; the session's one tools/list is the same for both ways and printed apart), and the wall
time (p50 of the rounds). The agent's own thinking between two calls is not simulated: the "today"
figures are the least such an agent waits, a model's turn per call comes on top. After each way, the
task's effect is checked on the app itself (dunst's history, each player's PlaybackStatus, the active
power profile, Transmission's torrents, mpv's volume through its IPC socket) and put back for the next.

Part 2 is the gateway's own cost, with the raw JSON-lines client on the test echo app: a 10-step plan of
chained `add`/`echo` calls (each step reading the previous result) against the same 10 calls as
`aai_exec` one after another and as direct dbus-fast calls, measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.desktop import Desktop, desktop
from bench.workflow_cost import plan_cost
from bench.workflow_tasks import CALL_TIMEOUT, Agent, Task, Way, tasks
from tests.e2e.mcp_client import stdio_session


@dataclass
class Figures:
    requests: int = 0
    read: int = 0
    guides: int = 0
    times: list[float] = field(default_factory=list)


async def measured(found: Desktop, task: Task, way: Way, agent: Agent, tag: str) -> tuple[int, int, int, float]:
    await asyncio.to_thread(task.reset, found)
    requests, read, guides = agent.requests, agent.read, agent.guides
    started = time.perf_counter()
    async with asyncio.timeout(4 * CALL_TIMEOUT):
        await way(agent, tag)
    elapsed = (time.perf_counter() - started) * 1000
    problem = await asyncio.to_thread(task.check, found, tag)
    if problem is not None:
        raise RuntimeError(f"the task was not done: {problem}")
    return agent.requests - requests, agent.read - read, agent.guides - guides, elapsed


async def part_one(workdir: Path, rounds: int) -> None:
    print("Part 1: multi-app tasks on real apps, the SDK client over stdio\n")
    with desktop(workdir / "desktop") as found:
        for app, why in found.missing.items():
            print(f"skipped app {app}: {why}")
        runnable = []
        for task in tasks(found):
            unmet = task.needs(found)
            if unmet:
                print(f"skipped task {task.name}: {unmet}")
            else:
                runnable.append(task)
        env = found.gateway_env(workdir / "home")
        async with (
            asyncio.timeout(CALL_TIMEOUT + rounds * 60 * len(runnable)),
            stdio_session(env, workdir / "gateway.log") as session,
        ):
            listed = await session.list_tools()
            listing = len(listed.model_dump_json(by_alias=True, exclude_none=True))
            print(f"tools/list, once per session for both ways: {listing:,} bytes (not counted below)")
            figures, failed = await measure_all(found, runnable, Agent(session), rounds)
        if found.mpv is not None and any(t.name.startswith("5 ") and t.name not in failed for t in runnable):
            volume = found.mpv.property("volume")
            print(f"mpv's volume after the last rollback of each way, read through its IPC socket: {volume} (set: 70)")
    print(f"\n{rounds} rounds after one warm-up; each way checked on the apps after each run\n")
    print(table(runnable, figures, failed))


async def measure_all(
    found: Desktop, runnable: list[Task], agent: Agent, rounds: int
) -> tuple[dict[tuple[str, str], Figures], dict[str, str]]:
    """Each task both ways, `rounds` times after a warm-up; the figures, and why a task that failed failed."""
    figures: dict[tuple[str, str], Figures] = {}
    failed: dict[str, str] = {}
    for index in range(rounds + 1):
        for task in runnable:
            if task.name in failed:
                continue
            for way_name, way in (("today", task.today), ("aai_run", task.plan)):
                tag = f"[{index}{way_name}]"
                try:
                    requests, read, guides, elapsed = await measured(found, task, way, agent, tag)
                except (RuntimeError, TimeoutError, KeyError, TypeError, AssertionError, OSError) as exc:
                    failed[task.name] = f"{way_name}: {type(exc).__name__}: {str(exc)[:300]}"
                    break
                except subprocess.SubprocessError as exc:
                    failed[task.name] = f"{way_name}: checking on the app: {str(exc)[:300]}"
                    break
                if index:
                    row = figures.setdefault((task.name, way_name), Figures())
                    row.requests, row.read, row.guides = requests, read, guides
                    row.times.append(elapsed)
    return figures, failed


def table(runnable: list[Task], figures: dict[tuple[str, str], Figures], failed: dict[str, str]) -> str:
    head = f"{'task':<28} {'way':<8} {'requests':>8} {'bytes read':>10} {'(guides)':>9}"
    lines = [f"{head} {'p50 ms':>8} {'min-max ms':>15}"]
    for task in runnable:
        if task.name in failed:
            lines.append(f"{task.name:<28} failed: {failed[task.name]}")
            continue
        today, plan = figures[(task.name, "today")], figures[(task.name, "aai_run")]
        for way_name, row in (("today", today), ("aai_run", plan)):
            p50 = statistics.median(row.times)
            spread = f"{min(row.times):.1f}-{max(row.times):.1f}"
            guides = f"({row.guides:,})" if row.guides else ""
            counts = f"{task.name:<28} {way_name:<8} {row.requests:>8} {row.read:>10,} {guides:>9}"
            lines.append(f"{counts} {p50:8.1f} {spread:>15}")
        ratio = statistics.median(today.times) / statistics.median(plan.times)
        ratios = f"{today.requests / plan.requests:>5.1f}x {today.read / plan.read:>9.2f}x {'':>9} {ratio:7.2f}x"
        lines.append(f"{'':<28} {'today/aai_run':<13} {ratios}")
    return "\n".join(lines)


async def main(rounds: int, plans: int, parts: set[int]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        if 1 in parts:
            await part_one(work / "one", rounds)
        if 2 in parts:
            print()
            await plan_cost(work / "two", rounds, plans)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--plans", type=int, default=300, help="10-step plans (and 10-call series) per round")
    parser.add_argument("--part", type=int, choices=(1, 2), action="append", help="run only this part")
    options = parser.parse_args()
    sys.exit(asyncio.run(main(options.rounds, options.plans, set(options.part or (1, 2)))))

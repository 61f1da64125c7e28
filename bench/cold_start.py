"""Cold start of `aai-gateway --mcp`: spawn → `initialize` answered → `tools/list` answered, with N generated
descriptors, beside the floors measured in the same run (`python -c pass` and `python -c "import mcp"`).

Run from the repository root with the venv the gateway is installed in:

    .venv/bin/python -m bench.cold_start [--apps 10 1000] [--runs 7]

A raw JSON-lines client drives the installed command (no SDK in the measuring process); each run uses
the same AAI home, so runs after the first see warm caches, as an agent's restart would. The first
(cold-cache) run is printed apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.descriptors import write_home
from bench.jsonlines import INITIALIZE, INITIALIZED, answer, send, spawn
from tests.support import stop


def one_start(env: dict[str, str]) -> tuple[float, float, int]:
    """Seconds to the initialize answer and to the tools/list answer, and the number of tools listed."""
    started = time.perf_counter()
    proc = spawn(env)
    try:
        send(proc.stdin, INITIALIZE)
        answer(proc.stdout, 1)
        initialized = time.perf_counter() - started
        send(proc.stdin, INITIALIZED)
        send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = answer(proc.stdout, 2)[0]["result"]["tools"]
        listed = time.perf_counter() - started
    finally:
        stop(proc)
    return initialized, listed, len(tools)


def floor(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    return (
        f"p50 {statistics.median(ordered) * 1000:6.0f} ms  (min {ordered[0] * 1000:.0f}, max {ordered[-1] * 1000:.0f})"
    )


def main(app_counts: list[int], runs: int, tools: int) -> None:
    for code in ("pass", "import mcp"):
        print(f"{'python -c ' + repr(code):<40} {ms([floor(code) for _ in range(runs)])}")
    for apps in app_counts:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            size = write_home(home / ".aai", apps, tools)
            env = dict(os.environ, HOME=str(home), AAI_PLATFORM="linux")
            env.pop("AAI_HOME", None)
            env.pop("XDG_CACHE_HOME", None)
            first = one_start(env)
            starts = [one_start(env) for _ in range(runs)]
            count = starts[0][2]
            label = f"{apps} descriptors ({size / apps / 1024:.1f} KiB each), {count} tools listed"
            print(label)
            cold = f"initialize {first[0] * 1000:.0f} ms, tools/list {first[1] * 1000:.0f} ms"
            print(f"  {'first start (cold caches)':<38} {cold}")
            print(f"  {'initialize answered':<38} {ms([s[0] for s in starts])}")
            print(f"  {'tools/list answered':<38} {ms([s[1] for s in starts])}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tools", type=int, default=4, help="tools per descriptor (4 ≈ 4 KiB)")
    args = parser.parse_args()
    main(args.apps, args.runs, args.tools)

"""Memory of `aai-gateway --mcp`: RSS with N descriptors loaded, then RSS every 10,000 of 100,000 `aai:exec`
calls to the DBus echo app (16 in flight), beside the RSS of a bare `python -c "import mcp"` in the same run.

Run from the repository root with the venv the gateway is installed in:

    .venv/bin/python -m bench.memory [--apps 1000] [--calls 100000] [--every 10000]

A private session bus and the test suite's echo app serve the calls; every call is also recorded in the
history, as in normal use.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from bench.descriptors import write_home
from bench.jsonlines import INITIALIZE, INITIALIZED, answer, send, spawn
from tests.support import TEST_APPS, Bus, install_descriptor, running, start_app, stop

IN_FLIGHT = 16
CALL = {"name": "aai_exec", "arguments": {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "hello"}}}
BARE = "import mcp, pathlib; print(next(l for l in pathlib.Path('/proc/self/status').open() if l.startswith('VmRSS')))"


def replies(stdout: IO[bytes] | None, ids: set[int]) -> list[dict[str, Any]]:
    """The results of the requests `ids`, in whatever order they are answered."""
    assert stdout is not None
    found = []
    while ids:
        message = json.loads(stdout.readline() or b"null")
        assert message is not None, "the gateway closed stdout before answering"
        if message.get("id") in ids and "method" not in message:
            ids.discard(message["id"])
            found.append(message["result"])
    return found


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def main(apps: int, calls: int, every: int) -> None:
    bare = subprocess.run([sys.executable, "-c", BARE], capture_output=True, text=True, check=True).stdout
    label = "python -c 'import mcp'"
    print(f"{label:<36} {int(bare.split()[1]) / 1024:7.1f} MB")
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        home = work / "home"
        write_home(home / ".aai", apps - 1, 4)
        install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
        rule = {"caller": "bench", "app": "dev.aai.echo", "decision": "allow"}
        (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"rules": [rule]}}))
        bus = Bus(work / "bus")
        try:
            with running(start_app([sys.executable, str(TEST_APPS / "echo_service.py")], bus.env())):
                proc = spawn(bus.env(HOME=str(home), AAI_PLATFORM="linux"))
                try:
                    send(proc.stdin, INITIALIZE)
                    answer(proc.stdout, 1)
                    send(proc.stdin, INITIALIZED)
                    send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                    listed = len(answer(proc.stdout, 2)[0]["result"]["tools"])
                    print(f"{f'gateway, {apps} descriptors, {listed} tools listed':<36} {rss_mb(proc.pid):7.1f} MB")
                    send(proc.stdin, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": CALL})
                    answer(proc.stdout, 3)  # the MCP SDK is loaded by now (tools/list may be answered before)
                    print(f"{'after the first call':<36} {rss_mb(proc.pid):7.1f} MB")
                    started = time.perf_counter()
                    next_id = 4
                    done = 0
                    while done < calls:
                        batch = range(next_id, next_id + min(IN_FLIGHT, calls - done))
                        for request_id in batch:
                            send(
                                proc.stdin, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": CALL}
                            )
                        for reply in replies(proc.stdout, set(batch)):
                            assert not reply.get("isError"), reply
                        next_id += len(batch)
                        before = done
                        done += len(batch)
                        if done // every != before // every:
                            rate = done / (time.perf_counter() - started)
                            print(f"{f'after {done} calls':<36} {rss_mb(proc.pid):7.1f} MB   ({rate:.0f} calls/s)")
                finally:
                    stop(proc)
        finally:
            bus.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000)
    args = parser.parse_args()
    main(args.apps, args.calls, args.every)

"""Per-call latency of a REST call through `aai:exec` over stdio, against the same call made directly with httpx2.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.rest_latency [--calls 1000]

The API is tests/apps/rest_server.py on 127.0.0.1 and the call is its echo endpoint, as the test
descriptor dev.aai.rest describes it (POST /v1/echo/s?fixed=yes&count=7 with a small JSON body).
The direct call is measured in the same run, so the ratio is what to compare across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx2

from bench.exec_latency import measure, row
from tests.e2e.mcp_client import stdio_session
from tests.support import TEST_APPS, read_line, running

ARGS = {"app": "dev.aai.rest", "tool": "echo", "args": {"segment": "s"}}


def install(home: Path, base_url: str) -> None:
    doc = json.loads((TEST_APPS / "dev.aai.rest" / "aai.json").read_text())
    doc["platforms"]["web"]["base_url"] = base_url
    target = home / ".aai" / "dev.aai.rest" / "aai.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(doc))
    (home / ".aai" / "config.json").write_text(json.dumps({"web": {"allowHttpLoopback": True}}))


async def direct(base_url: str, calls: int, warmup: int) -> list[float]:
    headers = {"Accept": "application/json", "X-Client": "aai-tests"}
    body = {"constant": [1, True, None]}
    async with httpx2.AsyncClient(headers=headers) as client:

        async def call() -> object:
            response = await client.post(f"{base_url}/echo/s", params={"fixed": "yes", "count": 7}, json=body)
            response.raise_for_status()
            return response.json()

        return await measure(call, calls, warmup)


async def main(calls: int, warmup: int) -> None:
    server = subprocess.Popen(
        [sys.executable, str(TEST_APPS / "rest_server.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"REST_API_KEY": "unused", "REST_BEARER_TOKEN": "unused", "PATH": ""},
        text=True,
    )
    with running(server), tempfile.TemporaryDirectory() as scratch:
        line = read_line(server, 15)
        assert line.startswith("ready http://127.0.0.1:"), line
        base_url = f"{line.removeprefix('ready ')}/v1"
        work = Path(scratch)
        install(work / "home", base_url)
        env = {"HOME": str(work / "home"), "AAI_PLATFORM": "linux"}
        base_times = await direct(base_url, calls, warmup)
        base = statistics.median(base_times)
        print(f"{calls} calls each after {warmup} warm-up calls; POST to the echo endpoint of rest_server.py\n")
        print(row("direct httpx2 call", base_times, None))
        async with stdio_session(env, work / "stdio.log") as session:
            times = await measure(lambda: session.call_tool("aai:exec", ARGS), calls, warmup)
        print(row("aai:exec over stdio", times, base))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.warmup))

"""Per-call latency of a REST call through `aai:exec` over stdio, against the same call made directly with httpx2.

Run from the repository root after `scripts/test` has made the venv:

    .venv/bin/python -m bench.rest_latency [--calls 1000] [--rounds 3]

The API is tests/apps/rest_server.py on 127.0.0.1 and the call is its echo endpoint, as the test
descriptor dev.aai.rest describes it (POST /v1/echo/s?fixed=yes&count=7 with a small JSON body).
Three ways are measured in each round: the call made directly with httpx2, the gateway's REST
executor called in this process (what the executor adds) and `aai:exec` over stdio (what an agent
sees). The direct call is measured in the same rounds, so the ratios are what to compare across
machines, and the spread between rounds shows how noisy the machine was.
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

from aai_gateway.config import load_settings
from aai_gateway.descriptor.validate import check_document
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.http import HttpExecutor
from bench.http_latency import measure, summary
from tests.e2e.mcp_client import stdio_session
from tests.support import TEST_APPS, read_line, running

ECHO_ARGS = {"segment": "s"}
ARGS = {"app": "dev.aai.rest", "tool": "echo", "args": ECHO_ARGS}


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


async def executor(home: Path, base_url: str, calls: int, warmup: int) -> list[float]:
    """The REST executor alone, in this process, with the settings the gateway would load."""
    doc = json.loads((home / ".aai" / "dev.aai.rest" / "aai.json").read_text())
    app = check_document(doc, "bench").descriptor
    assert app is not None
    settings = load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"})
    binding = app.bindings["web"]
    tool = next(t for t in binding.tools if t.name == "echo")
    run = HttpExecutor(settings, environ={})
    call = ToolCall(app=app, binding=binding, tool=tool, args=ECHO_ARGS, timeout=30)
    try:
        return await measure(lambda: run.execute(call), calls, warmup)
    finally:
        await run.aclose()


async def main(calls: int, warmup: int, rounds: int) -> None:
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
        figures: dict[str, list[float]] = {"direct": [], "executor": [], "stdio": []}
        async with stdio_session(env, work / "stdio.log") as session:
            for _ in range(rounds):
                figures["direct"].append(statistics.median(await direct(base_url, calls, warmup)))
                figures["executor"].append(statistics.median(await executor(work / "home", base_url, calls, warmup)))
                times = await measure(lambda: session.call_tool("aai_exec", ARGS), calls, warmup)
                figures["stdio"].append(statistics.median(times))
        base = figures["direct"]
        print(f"{rounds} rounds of {calls} calls each after {warmup} warm-up calls; POST to rest_server.py's echo\n")
        print(summary("direct httpx2 call", figures["direct"], None))
        print(summary("REST executor, in process", figures["executor"], base))
        print(summary("aai:exec over stdio", figures["stdio"], base))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.warmup, options.rounds))

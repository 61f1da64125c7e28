"""MCP servers behind the gateway against the same servers reached one by one, as a client would.

Run from the repository root once `scripts/test` has installed the servers (tests/mcpservers):

    .venv/bin/python -m bench.mcp_servers [--calls 300]

Two figures. The context an agent pays: the `tools/list` result of the gateway serving
server-everything, server-filesystem, server-memory and mcp-server-git, against the four `tools/list`
results a client connected to each server gets (compact JSON, tokens estimated as bytes / 4), and the
guides an agent reads when it uses a server. The time a call pays: the p50 of `echo` of
server-everything forwarded by `aai_exec`, against the same call made directly with the SDK's client
(the server is started once and shared; `--calls` calls after a warm-up).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

from bench.exec_latency import measure
from tests.e2e.mcp_client import stdio_session
from tests.mcpservers.servers import GIT_SERVER, descriptor, install, stdio


def servers(work: Path) -> list[dict[str, Any]]:
    shared = work / "shared"
    shared.mkdir()
    repo = work / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    found = [
        descriptor("mcp.everything", stdio("everything", "stdio")),
        descriptor("mcp.filesystem", stdio("filesystem", str(shared))),
        descriptor("mcp.memory", stdio("memory", MEMORY_FILE_PATH=str(work / "memory.jsonl"))),
    ]
    if GIT_SERVER.exists():
        execution = {"type": "mcp", "command": str(GIT_SERVER), "args": ["--repository", str(repo)]}
        found.append(descriptor("mcp.git", execution))
    return found


def size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


@asynccontextmanager
async def direct(doc: dict[str, Any]) -> AsyncIterator[ClientSession]:
    execution = doc["execution"]
    env = {k: v for k, v in execution.get("env", {}).items() if isinstance(v, str)}
    params = StdioServerParameters(command=execution["command"], args=execution["args"], env=env)
    with Path(os.devnull).open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def listing(result: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


async def p50(call: Callable[[], Awaitable[object]], calls: int) -> float:
    return statistics.median(await measure(call, calls, warmup=20))


async def main(calls: int) -> None:
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp)
        docs = servers(work)
        home = work / "home"
        install(home / ".aai", *docs)
        env = {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"}
        async with AsyncExitStack() as stack:
            flat = 0
            print(f"{'server':<18}{'tools':>7}{'bytes':>10}{'tokens':>9}")
            for doc in docs:
                session = await stack.enter_async_context(direct(doc))
                listed = listing(await session.list_tools())
                flat += size(listed)
                name = doc["app"]["id"]
                print(f"{name:<18}{len(listed['tools']):>7}{size(listed):>10}{size(listed) // 4:>9}")
            print(f"{'flat, all four':<18}{'':>7}{flat:>10}{flat // 4:>9}")
            gateway = await stack.enter_async_context(stdio_session(env, work / "gateway.log"))
            ours = listing(await gateway.list_tools())
            print(f"{'the gateway':<18}{len(ours['tools']):>7}{size(ours):>10}{size(ours) // 4:>9}")
            print(f"gateway listing: {100 * size(ours) / flat:.1f} % of the flat listings")
            for doc in docs:
                app = doc["app"]["id"]
                guide = await gateway.call_tool(f"app_{app.replace('.', '_')}", {})
                text = guide.content[0].text if guide.content and guide.content[0].type == "text" else ""
                print(f"  guide of {app}: {len(text.encode())} bytes, {len(text.encode()) // 4} tokens (read on use)")
            everything = await stack.enter_async_context(direct(docs[0]))
            arguments = {"message": "hello"}
            straight = await p50(lambda: everything.call_tool("echo", arguments), calls)
            exec_args = {"app": "mcp.everything", "tool": "echo", "args": arguments}
            forwarded = await p50(lambda: gateway.call_tool("aai_exec", exec_args), calls)
            print(
                f"echo p50: direct {straight:.2f} ms, through the gateway {forwarded:.2f} ms, "
                f"overhead {forwarded - straight:+.2f} ms"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    asyncio.run(main(parser.parse_args().calls))

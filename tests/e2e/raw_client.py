"""MCP over the installed gateway's stdin/stdout as bare JSON lines: many requests in flight, answers by id.

No SDK on this side, so what is measured or checked is the gateway alone.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.support import gateway_command

PROTOCOL = "2025-11-25"


class RawClient:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.unmatched: list[dict[str, Any]] = []
        """Server requests, notifications and answers to no pending request, in arrival order."""
        self._reader = asyncio.ensure_future(self._read())

    async def message(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The whole answer (result or error) to one request."""
        return await self.start(method, params)[1]

    def start(self, method: str, params: dict[str, Any]) -> tuple[int, asyncio.Future[dict[str, Any]]]:
        """Send a request; its id and the future of its whole answer."""
        request_id = next(self._ids)
        answer = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id, answer

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of one request; an error or an `isError` result raises."""
        message = await self.message(method, params)
        if "error" in message or message.get("result", {}).get("isError"):
            raise RuntimeError(f"{method} failed: {message}")
        result: dict[str, Any] = message["result"]
        return result

    def send(self, message: Mapping[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            message = json.loads(line)
            waiting = self._waiting.pop(message.get("id"), None) if "method" not in message else None
            if waiting is not None:
                waiting.set_result(message)
            else:
                self.unmatched.append(message)
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(RuntimeError("the gateway closed stdout"))

    async def initialize(self, name: str, *, list_tools: bool = True) -> None:
        client = {"name": name, "version": "1"}
        await self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": client})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if list_tools:
            await self.request("tools/list", {})  # as an agent does first

    async def aclose(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        await self._reader


async def spawn(env: Mapping[str, str], stderr: Path, *prefix: str, command: Sequence[str] | None = None) -> RawClient:
    """`aai-gateway --mcp` (or `command`, another server over stdio) started (after `prefix`, such as a
    command that drops privileges), not initialized."""
    with stderr.open("a") as errlog:
        proc = await asyncio.create_subprocess_exec(
            *prefix,
            *(command or (gateway_command(), "--mcp")),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=errlog,
            env=dict(env),
            limit=16 * 1024 * 1024,
        )
    return RawClient(proc)


@asynccontextmanager
async def raw_session(
    env: Mapping[str, str],
    stderr: Path,
    name: str,
    *,
    list_tools: bool = True,
    command: Sequence[str] | None = None,
) -> AsyncIterator[RawClient]:
    """`aai-gateway --mcp` (or `command`) initialized by a client called `name` (and its tools listed, unless
    not)."""
    client = await spawn(env, stderr, command=command)
    try:
        await client.initialize(name, list_tools=list_tools)
        yield client
    finally:
        await client.aclose()

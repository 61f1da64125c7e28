"""`aai_wait` driven by the MCP SDK client: started in the background, known to listen from its first progress
notification, so a test changes the app only once nothing can be missed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession


@dataclass
class Waiting:
    listening: anyio.Event = field(default_factory=anyio.Event)
    result: types.CallToolResult | None = None
    progress: list[float] = field(default_factory=list)

    async def answer(self, within: float = 60) -> dict[str, Any]:
        """The wait's structured answer, once it came (within `within` seconds, against a hang)."""
        with anyio.fail_after(within):
            while self.result is None:
                await anyio.sleep(0.05)
        assert not self.result.is_error, self.result
        structured = self.result.structured_content
        assert isinstance(structured, dict), self.result
        text = self.result.content[0]
        assert isinstance(text, types.TextContent)
        if not structured["timedOut"]:
            assert json.loads(text.text)["event"] == structured["event"]
        return structured


@asynccontextmanager
async def waiting(session: ClientSession, **arguments: Any) -> AsyncIterator[Waiting]:
    """`aai_wait` with `arguments` under way; the block runs once the gateway listens for the event."""
    wait = Waiting()

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        wait.progress.append(progress)
        wait.listening.set()

    async def call() -> None:
        wait.result = await session.call_tool("aai_wait", arguments, progress_callback=progressed)
        wait.listening.set()

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        with anyio.fail_after(30):
            await wait.listening.wait()
        yield wait
        with anyio.fail_after(float(arguments.get("timeout", 60)) + 30):
            while wait.result is None:
                await anyio.sleep(0.05)

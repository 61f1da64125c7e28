"""Large arguments to a DBus app, many at once: every call is answered whole and the connection to the
bus survives (the socket filling up is waited out, never taken for a lost connection)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.raw_client import raw_session
from tests.e2e.test_stdio_fast import CALLER, env_of
from tests.support import Bus

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CALLS = 12
SIZE = 1 << 20


@pytest.mark.hostile("limits")
async def test_many_large_calls_at_once_are_all_answered(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    env = env_of(bus, tmp_path)
    async with raw_session(env, tmp_path / "stderr.log", CALLER) as client:
        texts = [chr(ord("a") + n) * SIZE for n in range(CALLS)]
        answers = await asyncio.gather(
            *(
                client.message(
                    "tools/call",
                    {"name": "aai_exec", "arguments": {"app": "dev.aai.echo", "tool": "echo", "args": {"text": t}}},
                )
                for t in texts
            )
        )
    for text, answer in zip(texts, answers, strict=True):
        result = answer["result"]
        assert not result["isError"], result["content"][0]["text"][:300]
        assert result["content"][0]["text"] == text
    assert "lost the connection" not in (tmp_path / "stderr.log").read_text()

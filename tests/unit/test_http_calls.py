"""The parts of the HTTP fast path (`mcp/wire/http.py`) that lean on the SDK's transport: its idle countdown
(held through `sdk_private.holding`) and header reading."""

from __future__ import annotations

import math
import time
from typing import Any

import anyio
import pytest
from mcp.server.streamable_http import StreamableHTTPServerTransport

from aai_gateway.mcp.sdk_private import holding
from aai_gateway.mcp.wire.http import headers_of
from tests.virtual_clock import VirtualClockLoop

pytestmark = pytest.mark.anyio

IDLE = 60.0


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    """The idle countdown runs on the loop's clock, which here jumps instead of waiting."""
    return ("asyncio", {"loop_factory": VirtualClockLoop})


async def test_a_session_does_not_expire_while_a_call_runs_and_counts_down_after() -> None:
    started = time.monotonic()
    transport = StreamableHTTPServerTransport("session-1", is_json_response_enabled=True, idle_timeout=IDLE)
    async with transport.connect():
        scope = transport.idle_scope
        assert scope is not None
        scope.deadline = anyio.current_time() + IDLE
        with scope:
            with holding(transport), holding(transport):
                assert scope.deadline == math.inf
                await anyio.sleep(2 * IDLE)
                assert not scope.cancel_called
            ended = anyio.current_time()
            assert scope.deadline == ended + IDLE
            await anyio.sleep(10 * IDLE)
        assert scope.cancelled_caught
        assert anyio.current_time() == pytest.approx(ended + IDLE)
        await transport.terminate()
    assert time.monotonic() - started < IDLE, "the countdown ran on the virtual clock"


async def test_the_countdown_waits_for_the_last_of_several_calls() -> None:
    transport = StreamableHTTPServerTransport("session-2", is_json_response_enabled=True, idle_timeout=IDLE)
    async with transport.connect():
        scope = transport.idle_scope
        assert scope is not None
        with holding(transport):
            with holding(transport):
                pass
            assert scope.deadline == math.inf
        assert scope.deadline != math.inf
        await transport.terminate()


def test_headers_are_read_by_lower_case_name_the_first_of_repeated_ones() -> None:
    scope = {"headers": [(b"Content-Type", b"application/json"), (b"content-type", b"text/plain"), (b"host", b"x")]}
    assert headers_of(scope) == {"content-type": "application/json", "host": "x"}

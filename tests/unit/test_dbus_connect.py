"""The DBus connection is made once for every call that needs it, and a call cancelled meanwhile does not undo it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from dbus_fast.aio import MessageBus

from aai_gateway.service import Caller, Gateway

pytestmark = pytest.mark.anyio

CLI = Caller(name="connect-test", transport="cli")


@pytest.fixture(params=[pytest.param({}, id="asyncio"), pytest.param({"use_uvloop": True}, id="uvloop")])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    return ("asyncio", request.param)


async def test_a_call_cancelled_while_the_bus_is_connecting_leaves_the_connection_to_the_others(
    echo_gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[MessageBus] = []
    connect = MessageBus.connect

    async def counted(self: MessageBus) -> MessageBus:
        made.append(self)
        return await connect(self)

    monkeypatch.setattr(MessageBus, "connect", counted)
    first = asyncio.ensure_future(echo_gateway.call("dev.aai.echo", "slow", {"seconds": 30}, CLI))
    others = [asyncio.ensure_future(echo_gateway.call("dev.aai.echo", "echo", {"text": str(i)}, CLI)) for i in range(3)]
    while not made:
        await asyncio.sleep(0)
    first.cancel()
    assert await asyncio.gather(*others) == ["0", "1", "2"]
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await echo_gateway.call("dev.aai.echo", "echo", {"text": "after"}, CLI) == "after"
    assert len(made) == 1

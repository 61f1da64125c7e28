"""The DBus connection is made once for every call that needs it, and a call cancelled meanwhile does not undo it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from dbus_fast.aio import MessageBus

from aai_gateway.config import load_settings
from aai_gateway.service import Caller, Gateway
from tests.support import TEST_APPS, Bus, install_descriptor

pytestmark = pytest.mark.anyio

CLI = Caller(name="connect-test", transport="cli")


@pytest.fixture(params=[pytest.param({}, id="asyncio"), pytest.param({"use_uvloop": True}, id="uvloop")])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    return ("asyncio", request.param)


@pytest.fixture
async def gateway(bus: Bus, echo_app: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Gateway]:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", bus.address)
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}}))
    served = Gateway(load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"}))
    try:
        yield served
    finally:
        await served.aclose()


async def test_a_call_cancelled_while_the_bus_is_connecting_leaves_the_connection_to_the_others(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[MessageBus] = []
    connect = MessageBus.connect

    async def counted(self: MessageBus) -> MessageBus:
        made.append(self)
        return await connect(self)

    monkeypatch.setattr(MessageBus, "connect", counted)
    first = asyncio.ensure_future(gateway.call("dev.aai.echo", "slow", {"seconds": 30}, CLI))
    others = [asyncio.ensure_future(gateway.call("dev.aai.echo", "echo", {"text": str(i)}, CLI)) for i in range(3)]
    while not made:
        await asyncio.sleep(0)
    first.cancel()
    assert await asyncio.gather(*others) == ["0", "1", "2"]
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await gateway.call("dev.aai.echo", "echo", {"text": "after"}, CLI) == "after"
    assert len(made) == 1

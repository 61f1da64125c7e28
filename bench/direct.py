"""The direct call every benchmark compares the gateway with: the echo app's Echo over dbus-fast."""

from __future__ import annotations

from dbus_fast import Message
from dbus_fast.aio import MessageBus


async def echo(bus: MessageBus, text: str = "hello") -> Message | None:
    """One Echo call. A new Message each time: dbus-fast numbers each message it sends."""
    return await _call(bus, "Echo", "s", [text])


async def add(bus: MessageBus, a: int, b: int = 1) -> int:
    """One Add call: a + b."""
    reply = await _call(bus, "Add", "ii", [a, b])
    assert reply is not None
    total: int = reply.body[0]
    return total


async def _call(bus: MessageBus, member: str, signature: str, body: list[object]) -> Message | None:
    return await bus.call(
        Message(
            destination="dev.aai.Echo",
            path="/dev/aai/Echo",
            interface="dev.aai.Echo",
            member=member,
            signature=signature,
            body=body,
        )
    )

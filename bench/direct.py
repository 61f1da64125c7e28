"""The direct call every benchmark compares the gateway with: the echo app's Echo over dbus-fast."""

from __future__ import annotations

from dbus_fast import Message
from dbus_fast.aio import MessageBus


async def echo(bus: MessageBus, text: str = "hello") -> Message | None:
    """One Echo call. A new Message each time: dbus-fast numbers each message it sends."""
    return await bus.call(
        Message(
            destination="dev.aai.Echo",
            path="/dev/aai/Echo",
            interface="dev.aai.Echo",
            member="Echo",
            signature="s",
            body=[text],
        )
    )

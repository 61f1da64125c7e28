"""What both stdio transports (the pipes and the worker threads) share: how much they let wait, and
closing as the SDK's streams do. Imports nothing of the SDK."""

from __future__ import annotations

from types import TracebackType
from typing import Generic, Self, TypeVar

import anyio

T = TypeVar("T")

BACKLOG_LIMIT = 4 << 20
"""Bytes of answers waiting for a client that does not read, beyond which no new request is read
(by each transport)."""
HELD_LIMIT = 16 << 20
"""Bytes of requests read and not answered yet, beyond which no new request is read (each holds a few
copies of its arguments while it runs). Large, as a call waiting for the client's consent holds it too."""


class Closing:
    """`async with` closes the stream, as the SDK's streams do."""

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


class Reading(Closing, Generic[T]):
    """A read stream the SDK iterates: what `receive` gives, until the stream ends."""

    async def receive(self) -> T:
        raise NotImplementedError

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

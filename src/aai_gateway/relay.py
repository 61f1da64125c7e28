"""What a running call may pass back to the client that made it: an MCP server's progress, and its
elicitation and sampling requests, relayed through the gateway to our own client."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Relay(Protocol):
    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """A progress notification for the call; dropped when the client asked for none."""
        ...

    async def elicit(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """The client's answer to `elicitation/create` with these params (JSON), or None when the client
        does not take elicitation requests."""
        ...

    async def sample(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """The client's answer to `sampling/createMessage`, or None when the client does not sample."""
        ...

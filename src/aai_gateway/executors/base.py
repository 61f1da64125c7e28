"""The small interface every automation backend implements.

An executor receives a `ToolCall` whose arguments are already validated against the tool's schema
and returns a JSON value. It translates every failure of its platform into an `AaiError` at its own
edge, and it never blocks the event loop: blocking work goes to a thread, always with a timeout.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.descriptor.model import Event
from aai_gateway.relay import Relay


@dataclass(slots=True)  # not frozen: a frozen dataclass takes 0.4 µs more to make, once for every call
class ToolCall:
    app: Descriptor
    binding: Binding
    tool: Tool
    args: Mapping[str, Any]
    timeout: float
    """Seconds the whole call may take, from the tool, the app settings or the gateway default."""
    relay: Relay | None = None
    """The way back to the caller while the call runs (progress, the app's questions), if it has one."""


class Executor(Protocol):
    async def execute(self, call: ToolCall) -> Any:
        """Run the call and return its result as a JSON value, or raise an `AaiError`."""
        ...

    async def aclose(self) -> None:
        """Release connections; the executor may be used again afterwards."""
        ...


class Forwarded(dict[str, Any]):
    """A tool result as an MCP server sent it (`content` blocks, `structuredContent`, `isError`): passed
    on to the caller unchanged, and recorded in the history as this JSON."""


Approve = Callable[[Descriptor, Binding], Awaitable[None]]
"""Awaited before an app's server is started or used; raises an `AaiError` when it may not be."""


@runtime_checkable
class ListsTools(Protocol):
    """An executor whose apps' tools come from the app itself at run time (an MCP server's `tools/list`)."""

    tools_changed: Callable[[str], None] | None
    """Told the app id when the app says its tools changed."""
    approve: Approve | None
    """The user's yes to the program an app runs, asked for before it starts (see `consent.launches`)."""

    async def live_tools(self, app: Descriptor, binding: Binding, timeout: float) -> tuple[Tool, ...]: ...

    def live_events(self, app: Descriptor) -> tuple[Event, ...]:
        """The app's events with those the app itself offers (an MCP server's capabilities), once it was listed."""
        ...

    def statuses(self) -> Sequence[Any]: ...

    async def retain(self, app_ids: Set[str]) -> None:
        """Stop what serves apps not in `app_ids` (no longer served after a rescan)."""

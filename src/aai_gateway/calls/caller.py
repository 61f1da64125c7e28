"""Who asked for a call, and how to reach them while it runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aai_gateway.consent import Ask
from aai_gateway.relay import Relay

AppsChanged = Callable[[set[str]], Awaitable[None]]
"""Told the ids of apps whose tools changed."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asked: the MCP client's name (or "cli") and the transport it came over.

    `ask` puts a consent question to the user (MCP elicitation), when the transport can; the "cli"
    transport is the user at their own terminal, allowed unless a rule or stored decision denies.
    """

    name: str = "unknown"
    transport: str = "stdio"
    ask: Ask | None = field(default=None, compare=False, repr=False)
    arrived: float | None = field(default=None, compare=False, repr=False)
    """When the request reached the gateway (`time.monotonic()`), if it waited for the gateway to start;
    that wait counts against the call's timeout."""
    trace: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    """The request's `params._meta`, given only when telemetry is on: the W3C trace context of the
    client's span (`traceparent`, `tracestate`, SEP-414) that the call's span continues."""
    relay: Relay | None = field(default=None, compare=False, repr=False)
    """The way back to the client while a call runs (an MCP server's progress and questions), if any."""
    parent: str | None = field(default=None, compare=False, repr=False)
    """The call id of the plan run this call is a step of, if any: the history keeps it as the run's child."""
    step: str | None = field(default=None, compare=False, repr=False)
    """Which step of that run (`read`, `notify[2]`, `lower (undo)`)."""
    begun: Callable[[], None] | None = field(default=None, compare=False, repr=False)
    """Told when a long call (a wait, a plan) is agreed to and its work begins: an MCP task answers then."""

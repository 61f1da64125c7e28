"""Every use of a name the MCP SDK keeps private, in one place.

The fast paths lean on a few SDK internals the SDK offers no public way to reach: the streamable-HTTP
session manager's tables of sessions, a transport's idle countdown, the connection behind a request's
session, and the stream protocols its `Server.run` is typed with. `mcp` is pinned to one minor range
(pyproject.toml) and tests/unit/test_sdk_private.py holds one test per name, failing when a release
renames or reshapes one. At run time a missing or reshaped name is not fatal: `http_problems` and
`connection_of` report it, the gateway logs one warning, and the SDK serves on its own.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared._stream_protocols import ReadStream, WriteStream

log = logging.getLogger(__name__)

__all__ = ["ReadStream", "WriteStream", "connection_of", "holding", "http_problems", "open_transport"]


def http_problems(manager: StreamableHTTPSessionManager) -> list[str]:
    """What the HTTP fast path needs of the SDK and does not find; empty when all is there."""
    problems = []
    for name in ("_session_owners", "_server_instances"):
        if not isinstance(getattr(manager, name, None), dict):
            problems.append(f"StreamableHTTPSessionManager.{name} is not a dict")
    probe = StreamableHTTPServerTransport("aai-gateway-probe", is_json_response_enabled=True, idle_timeout=1.0)
    if getattr(probe, "_idle_timeout", None) != 1.0:
        problems.append("StreamableHTTPServerTransport._idle_timeout is not the idle timeout")
    if type(getattr(probe, "_requests_in_flight", None)) is not int:
        problems.append("StreamableHTTPServerTransport._requests_in_flight is not a count")
    return problems


def open_transport(manager: StreamableHTTPSessionManager, session_id: str) -> StreamableHTTPServerTransport | None:
    """The SDK's transport of a session when it is open and serves anyone (there is no per-user auth)."""
    if session_id in manager._session_owners:
        return None
    transport = manager._server_instances.get(session_id)
    if transport is None or transport.is_terminated:
        return None
    if transport.idle_scope is not None and transport.idle_scope.cancel_called:
        return None
    return transport


@contextmanager
def holding(transport: StreamableHTTPServerTransport) -> Iterator[None]:
    """What the SDK's transport does around each request it serves: the session does not expire while one runs,
    and its idle countdown starts again when the last one ends."""
    timeout = transport._idle_timeout
    scope = transport.idle_scope
    if scope is None or timeout is None:
        yield
        return
    transport._requests_in_flight += 1
    scope.deadline = math.inf
    try:
        yield
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            scope.deadline = anyio.current_time() + timeout


_warned = False


def connection_of(session: Any) -> Connection | None:
    """The connection behind a request's session (the SDK makes a session object per request and keeps the
    connection private). None, with one warning, where the SDK no longer has it: the fast paths then never
    start and clients are not told of list changes, but every request is still served by the SDK."""
    global _warned  # noqa: PLW0603 - one warning per process
    connection = getattr(session, "_connection", None)
    if isinstance(connection, Connection):
        return connection
    if not _warned:
        _warned = True
        log.warning("the MCP SDK's sessions no longer carry their connection: serving every request through the SDK")
    return None

"""Each private SDK name the gateway uses, checked against the installed SDK: one test per name.

A failure here means the SDK renamed or reshaped one (move `mcp`'s pin in pyproject.toml only once
`aai_gateway.mcp.sdk_private` follows); the gateway itself would then log a warning and serve through
the SDK alone, which the last tests check."""

from __future__ import annotations

import logging
import typing

import pytest
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.session import ServerSession
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from aai_gateway.mcp import sdk_private
from aai_gateway.mcp.sdk_private import ReadStream, WriteStream, connection_of, http_problems, open_transport

pytestmark = pytest.mark.anyio


def manager() -> StreamableHTTPSessionManager:
    return StreamableHTTPSessionManager(Server("probe"), json_response=True)


def test_session_owners_is_the_managers_table_of_sessions_bound_to_a_user() -> None:
    owners = manager()._session_owners
    assert isinstance(owners, dict)
    assert owners == {}


def test_server_instances_is_the_managers_table_of_open_transports() -> None:
    sessions = manager()
    transport = StreamableHTTPServerTransport("s-1", is_json_response_enabled=True)
    sessions._server_instances["s-1"] = transport
    assert open_transport(sessions, "s-1") is transport
    sessions._session_owners["s-1"] = object()  # type: ignore[assignment]
    assert open_transport(sessions, "s-1") is None
    assert open_transport(sessions, "s-2") is None


def test_idle_timeout_is_the_transports_idle_timeout() -> None:
    assert StreamableHTTPServerTransport("s", is_json_response_enabled=True, idle_timeout=7.5)._idle_timeout == 7.5


def test_requests_in_flight_is_the_transports_count() -> None:
    assert StreamableHTTPServerTransport("s", is_json_response_enabled=True)._requests_in_flight == 0


def test_connection_is_what_a_session_is_made_with() -> None:
    connection = Connection(typing.cast("typing.Any", None), protocol_version="2025-11-25")
    session = ServerSession(typing.cast("typing.Any", None), connection)
    assert connection_of(session) is connection


def test_the_stream_protocols_are_what_server_run_takes() -> None:
    hints = typing.get_type_hints(Server.run)
    assert hints["read_stream"].__origin__ is ReadStream
    assert hints["write_stream"].__origin__ is WriteStream


def test_a_manager_that_changed_is_reported_and_served_by_the_sdk_alone() -> None:
    sessions = manager()
    assert http_problems(sessions) == []
    del sessions._server_instances
    assert http_problems(sessions) == ["StreamableHTTPSessionManager._server_instances is not a dict"]


def test_a_session_without_its_connection_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    sdk_private._warned = False
    with caplog.at_level(logging.WARNING):
        assert connection_of(object()) is None
        assert connection_of(object()) is None
    assert [r.message for r in caplog.records].count(
        "the MCP SDK's sessions no longer carry their connection: serving every request through the SDK"
    ) == 1

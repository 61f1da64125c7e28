"""Each private SDK name the gateway uses, checked against the installed SDK: one test per name.

A failure here means the SDK renamed or reshaped one (move `mcp`'s pin in pyproject.toml only once
`aai_gateway.mcp.sdk_private` follows); the gateway itself would then log a warning and serve through
the SDK alone, which the last tests check."""

from __future__ import annotations

import logging
import math
import typing

import anyio
import pytest
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.session import ServerSession
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from aai_gateway.mcp import sdk_private
from aai_gateway.mcp.sdk_private import ReadStream, WriteStream, connection_of, holding, http_problems, open_transport
from aai_gateway.mcp.wire.http import headers_of

pytestmark = pytest.mark.anyio


async def test_a_session_does_not_expire_while_a_call_runs_and_counts_down_after() -> None:
    transport = StreamableHTTPServerTransport("session-1", is_json_response_enabled=True, idle_timeout=0.2)
    async with transport.connect():
        scope = transport.idle_scope
        assert scope is not None
        scope.deadline = anyio.current_time() + 0.2
        with scope:
            with holding(transport), holding(transport):
                assert scope.deadline == math.inf
                await anyio.sleep(0.4)
                assert not scope.cancel_called
            ended = anyio.current_time()
            assert ended < scope.deadline <= ended + 0.2
            await anyio.sleep(1)
        assert scope.cancelled_caught
        await transport.terminate()


async def test_the_countdown_waits_for_the_last_of_several_calls() -> None:
    transport = StreamableHTTPServerTransport("session-2", is_json_response_enabled=True, idle_timeout=60)
    async with transport.connect():
        scope = transport.idle_scope
        assert scope is not None
        with holding(transport):
            with holding(transport):
                pass
            assert scope.deadline == math.inf
        assert scope.deadline != math.inf
        await transport.terminate()


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


def test_headers_are_read_by_lower_case_name_the_first_of_repeated_ones() -> None:
    scope = {"headers": [(b"Content-Type", b"application/json"), (b"content-type", b"text/plain"), (b"host", b"x")]}
    assert headers_of(scope) == {"content-type": "application/json", "host": "x"}

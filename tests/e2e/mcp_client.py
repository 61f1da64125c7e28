"""The official MCP SDK client, driving the installed `aai-gateway` over stdio or streamable HTTP."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext, ElicitationFnT
from mcp.client.streamable_http import streamable_http_client

from tests.support import gateway_command, stop, wait_until


class Inbox:
    """Server notifications a session received, awaitable by method name."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            self.methods.append(method)
            self._arrived.set()
            self._arrived = anyio.Event()

    async def wait_for(self, method: str, timeout: float = 10) -> None:
        with anyio.fail_after(timeout):
            while method not in self.methods:
                await self._arrived.wait()


class Consenter:
    """A user answering the gateway's consent questions (MCP elicitation) with one choice, each question kept.

    `decision` is a choice of the form ("once", "tool", "app", "deny", "never"), or the form's other
    outcomes "decline" and "cancel".
    """

    def __init__(self, decision: str = "app") -> None:
        self.decision = decision
        self.questions: list[types.ElicitRequestFormParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams), params
        self.questions.append(params)
        if self.decision == "decline":
            return types.ElicitResult(action="decline")
        if self.decision == "cancel":
            return types.ElicitResult(action="cancel")
        choices = [c["const"] for c in params.requested_schema["properties"]["decision"]["oneOf"]]
        assert self.decision in choices, choices
        return types.ElicitResult(action="accept", content={"decision": self.decision})

    @property
    def messages(self) -> list[str]:
        return [q.message for q in self.questions]


async def always_for_the_app(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """What the test client answers by default: allow every tool of the app from now on."""
    return await Consenter("app")(context, params)


@asynccontextmanager
async def stdio_session(
    env: Mapping[str, str],
    stderr: Path,
    *args: str,
    inbox: Inbox | None = None,
    consent: ElicitationFnT | None = always_for_the_app,
) -> AsyncIterator[ClientSession]:
    """`consent` answers the gateway's consent questions; None declares no elicitation capability."""
    params = StdioServerParameters(command=gateway_command(), args=["--mcp", *args], env=dict(env))
    with stderr.open("a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=inbox, elicitation_callback=consent) as session,
        ):
            await session.initialize()
            yield session


@contextmanager
def web_gateway(env: Mapping[str, str], stderr: Path, *args: str) -> Iterator[str]:
    """`aai-gateway --web --port 0` with stderr to a file; yields the MCP URL it prints there."""
    with listening(["--web", "--port", "0", *args], env, stderr) as (_, url):
        yield url


@contextmanager
def listening(
    args: Sequence[str], env: Mapping[str, str], stderr: Path
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The installed gateway serving HTTP with `args` (`--web ...`, `serve ...`), stderr to a file; yields its
    process and the MCP URL it prints there, and stops it after."""
    with stderr.open("a") as errlog:
        proc = subprocess.Popen(
            [gateway_command(), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            env=dict(env),
        )
    try:
        found: list[str] = []

        def printed_url() -> bool:
            assert proc.poll() is None, f"aai-gateway {args[0]} exited: {stderr.read_text()}"
            found.extend(line for line in stderr.read_text().splitlines() if "MCP over HTTP at " in line)
            return bool(found)

        wait_until(printed_url, 60, f"aai-gateway {args[0]} to listen")
        yield proc, found[0].split(" at ", 1)[1].strip()
    finally:
        stop(proc)


@asynccontextmanager
async def http_session(
    url: str, inbox: Inbox | None = None, consent: ElicitationFnT | None = always_for_the_app
) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, message_handler=inbox, elicitation_callback=consent) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def error_of(session: ClientSession, name: str, arguments: dict[str, Any]) -> types.ErrorData:
    """The error a call came back with, in either style: a JSON-RPC error, or (the default) an `isError` result
    carrying `structuredContent.error`, given here as the same `{code, message, data: {type, detail}}`."""
    try:
        result = await session.call_tool(name, arguments)
    except MCPError as exc:
        return exc.error
    if result.is_error and result.structured_content is not None and "error" in result.structured_content:
        error = result.structured_content["error"]
        block = result.content[0]
        assert isinstance(block, types.TextContent)
        assert block.text == f"{error['type']} ({error['code']}): {' '.join(error['detail'].split())}", block.text
        return types.ErrorData(
            code=error["code"], message=block.text, data={"type": error["type"], "detail": error["detail"]}
        )
    raise AssertionError(f"{name} succeeded: {result}")

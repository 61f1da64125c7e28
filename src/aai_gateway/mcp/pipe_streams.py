"""The SDK's read and write streams over the pipes (mcp/pipes.py): one message per line, screened by the
wire on the way in."""

from __future__ import annotations

import asyncio
import logging
from collections import deque

import anyio
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import JSONRPCError, JSONRPCResponse

from aai_gateway.mcp.pacing import Closing, Reading
from aai_gateway.mcp.pipes import PipeWriter
from aai_gateway.mcp.wire.early import Arrived
from aai_gateway.mcp.wire.jsonrpc import PARSE_ERROR, Refusal, encoded, error
from aai_gateway.mcp.wire.screen import screened

log = logging.getLogger("aai_gateway.mcp.pipes")


class PipeReader(Reading[SessionMessage | Exception]):
    """The server's read stream: one message per line, screened by the wire; a malformed line is answered
    here, in order, and never reaches the SDK. Blank lines are skipped."""

    def __init__(self, reader: asyncio.StreamReader, writer: PipeWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._skip = 0
        self._arrivals: deque[float] = deque()

    def arrivals(self, skip: int, arrivals: deque[float]) -> None:
        """The lines read before the pipes opened: after the first `skip`, when each arrived."""
        self._skip, self._arrivals = skip, arrivals

    def _arrived(self) -> float | None:
        if self._skip:
            self._skip -= 1
            return None
        return self._arrivals.popleft() if self._arrivals else None

    async def receive(self) -> SessionMessage | Exception:
        while True:
            try:
                line = await self._reader.readline()
                arrived = self._arrived() if self._arrivals else None
            except ValueError:  # longer than LINE_LIMIT: the reader has dropped it
                await self._writer.send_line(encoded(error(None, PARSE_ERROR, "Parse error: line longer than 1 GiB")))
                continue
            except (ConnectionError, OSError) as exc:
                raise anyio.EndOfStream from exc
            if not line:
                raise anyio.EndOfStream
            if line.isspace():
                continue
            message = screened(line)
            if isinstance(message, SessionMessage) and arrived is not None:
                return SessionMessage(message.message, metadata=ServerMessageMetadata(request_context=Arrived(arrived)))
            if not isinstance(message, Refusal):
                return message
            if message.answer is not None:
                await self._writer.send_line(encoded(message.answer))


class PipeSender(Closing):
    """The SDK's write stream: each message serialised and written as one line, in the order sent."""

    def __init__(self, writer: PipeWriter, answered: set[int | str]) -> None:
        self._writer = writer
        self._answered = answered
        """Requests answered before the SDK took over; the SDK's own answers to them are not sent."""

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message
        if self._answered and isinstance(message, JSONRPCResponse | JSONRPCError) and message.id in self._answered:
            self._answered.discard(message.id)
            if isinstance(message, JSONRPCError):
                log.warning("the SDK refused a request answered at start: %s", message.error.message)
            return
        await self._writer.send_line(message.model_dump_json(by_alias=True, exclude_unset=True).encode())

    async def aclose(self) -> None:
        await self._writer.aclose()

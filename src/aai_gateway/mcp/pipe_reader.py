"""The SDK's read stream over the pipes (mcp/pipes.py): one message per line, screened by the wire."""

from __future__ import annotations

import asyncio
from collections import deque

import anyio
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from aai_gateway.mcp.pacing import Reading
from aai_gateway.mcp.pipes import PipeWriter
from aai_gateway.mcp.wire.early import Arrived
from aai_gateway.mcp.wire.jsonrpc import PARSE_ERROR, Refusal, encoded, error
from aai_gateway.mcp.wire.screen import screened


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

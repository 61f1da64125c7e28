"""A minimal streamable-HTTP MCP client for the benchmarks: JSON-RPC POSTs over kept-alive HTTP/1.1
connections, one per request in flight, with the session id kept.

It costs its process a few tens of microseconds a request, where the MCP SDK's client costs most of a
millisecond: with the SDK's client, a benchmark of many requests in flight measures the client more
than the server. It reads an answer sent as JSON (`Content-Length`) or as a server-sent event stream
(chunked), and nothing else HTTP has.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

PROTOCOL = "2025-06-18"


class RawHttp:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path or "/"
        self.session: str | None = None
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._ids = 0

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The result of a JSON-RPC request; RuntimeError for an error answer."""
        self._ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._ids, "method": method}
        if params is not None:
            message["params"] = params
        answer = await self._post(message)
        if answer is None or "error" in answer:
            raise RuntimeError(f"{method} was refused: {answer}")
        return answer["result"]

    async def notify(self, method: str) -> None:
        await self._post({"jsonrpc": "2.0", "method": method})

    async def initialize(self, name: str) -> None:
        hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}
        await self.request("initialize", hello)
        await self.notify("notifications/initialized")

    async def aclose(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()

    async def _post(self, message: dict[str, Any]) -> dict[str, Any] | None:
        body = json.dumps(message).encode()
        head = [
            f"POST {self.path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
            f"Content-Length: {len(body)}",
        ]
        if self.session is not None:
            head += [f"Mcp-Session-Id: {self.session}", f"Mcp-Protocol-Version: {PROTOCOL}"]
        request = ("\r\n".join(head) + "\r\n\r\n").encode() + body
        while self._idle:  # a connection kept since; the server closes one left idle for a few seconds
            reader, writer = self._idle.pop()
            writer.write(request)
            try:
                status, headers = await _head(reader)
                break
            except (asyncio.IncompleteReadError, ConnectionError):
                writer.close()
        else:
            reader, writer = await asyncio.open_connection(self.host, self.port)
            writer.write(request)
            status, headers = await _head(reader)
        if "mcp-session-id" in headers:
            self.session = headers["mcp-session-id"]
        if headers.get("transfer-encoding") == "chunked":
            text = b"".join([chunk async for chunk in _chunks(reader)])
        else:
            text = await reader.readexactly(int(headers.get("content-length", "0")))
        self._idle.append((reader, writer))
        if status == 202 or not text:
            return None
        if headers.get("content-type", "").startswith("text/event-stream"):
            data = [line[5:] for line in text.split(b"\n") if line.startswith(b"data:")]
            text = data[-1] if data else b"null"
        found: dict[str, Any] | None = json.loads(text)
        return found


async def _head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return status, headers


async def _chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while True:
        size = int((await reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
        chunk = await reader.readexactly(size + 2)
        if size == 0:
            return
        yield chunk[:-2]


@asynccontextmanager
async def raw_http_session(url: str, name: str) -> AsyncIterator[RawHttp]:
    client = RawHttp(url)
    try:
        await client.initialize(name)
        yield client
    finally:
        await client.aclose()

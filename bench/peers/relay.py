"""The bare relay the gateway is compared with: JSON lines on stdin, the echo app's Echo over dbus-fast,
JSON lines on stdout. No checks, consent, history, log or SDK: what a call costs with nothing but the
wire and the bus. It answers `initialize`, `tools/list` (one tool) and `tools/call`; calls run
concurrently, as the gateway's do.

    python bench/peers/relay.py   (DBUS_SESSION_BUS_ADDRESS names the bus the echo app is on)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from dbus_fast import Message
from dbus_fast.aio import MessageBus

TOOL = {"name": "aai_exec", "description": "echo", "inputSchema": {"type": "object"}}


async def main() -> None:
    bus = await MessageBus(bus_address=os.environ["DBUS_SESSION_BUS_ADDRESS"]).connect()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    tasks: set[asyncio.Task[None]] = set()

    def send(message: dict[str, Any]) -> None:
        writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    async def call(request_id: Any, arguments: dict[str, Any]) -> None:
        text = str(arguments.get("args", {}).get("text", ""))
        reply = await bus.call(
            Message(
                destination="dev.aai.Echo",
                path="/dev/aai/Echo",
                interface="dev.aai.Echo",
                member="Echo",
                signature="s",
                body=[text],
            )
        )
        body = reply.body[0] if reply is not None else ""
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": str(body)}]}})

    while line := await reader.readline():
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "tools/call":
            task = asyncio.create_task(call(request_id, message["params"].get("arguments") or {}))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        elif method == "initialize":
            info = {"name": "relay", "version": "1"}
            version = message["params"]["protocolVersion"]
            result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [TOOL]}})
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    bus.disconnect()


if __name__ == "__main__":
    try:
        import uvloop  # the gateway's own loop, so the two differ only in what they do per call

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())

"""A raw JSON-lines MCP client for the benchmarks: no SDK in the measuring process."""

from __future__ import annotations

import json
import subprocess
from typing import IO, Any

from tests.support import gateway_command

PROTOCOL = "2025-11-25"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def spawn(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [gateway_command(), "--mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )


def send(stdin: IO[bytes] | None, message: dict[str, Any]) -> None:
    assert stdin is not None
    stdin.write(json.dumps(message).encode() + b"\n")
    stdin.flush()


def answer(stdout: IO[bytes] | None, request_id: int) -> tuple[dict[str, Any], int]:
    """The response to `request_id` and its size on the wire, skipping anything the server sends first."""
    assert stdout is not None
    while True:
        line = stdout.readline()
        if not line:
            raise RuntimeError("the gateway closed stdout before answering")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            if "error" in message:
                raise RuntimeError(f"request {request_id} failed: {message['error']}")
            return message, len(line)

"""A stdio session's first answers, given before the MCP SDK is imported.

Importing the SDK takes most of a second, longer than everything else the gateway does to start.
An agent starts the gateway and waits for `initialize` and then `tools/list`; both answers depend
only on the gateway's own state, so they are written here, straight to stdout, and the SDK is
imported afterwards. The SDK is then handed the session as if it had seen it from the start: the
`initialize` request and `notifications/initialized` are replayed to it (its own answer to that
`initialize` is dropped), followed by anything else the client has sent meanwhile, in order.

Anything unexpected (another first request, malformed or unusual parameters, stdin or stdout that
is not a pipe or a socket) leaves the whole session to the SDK, as if this module did not exist.
"""

from __future__ import annotations

import os
import select
import stat
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aai_gateway import __version__
from aai_gateway.mcp.catalogue import SERVER_NAME, instructions, tool_list
from aai_gateway.mcp.names import Names
from aai_gateway.mcp.wire.jsonrpc import Message, encoded, is_request_id, read
from aai_gateway.service import Gateway

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Protocol versions the SDK negotiates with `initialize` (a test keeps this in step with the SDK)."""
CAPABILITIES: dict[str, Any] = {
    "completions": {},
    "prompts": {"listChanged": False},
    "resources": {"listChanged": True, "subscribe": True},
    "tools": {"listChanged": True},
}
PROBE_ID = "aai-gateway/early-start"
"""Id of a `tools/list` the SDK is given after the replay, so that its server sees the session (and
tells it of later changes) even when the client's next request is answered before the SDK sees one."""
LIST_WAIT = 0.1
"""Seconds to wait for `tools/list` after `initialize` is answered, before importing the SDK."""


@dataclass(frozen=True, slots=True)
class Arrived:
    """When a request read while the gateway was still starting reached it (`time.monotonic()`): its
    timeout runs from then, not from when the gateway got round to it."""

    at: float


class Early:
    def __init__(self, tool_names: str = "strict") -> None:
        self.instructions = instructions(tool_names)
        """What the `initialize` answered here tells the client, naming the tools as they are listed."""
        self.replay: list[bytes] = []
        """Lines the SDK must see first, in order."""
        self.initialize_id: int | str | None = None
        """The id of the `initialize` answered here: the SDK's own answer to it is not sent."""
        self.client: dict[str, Any] | None = None
        """The params of the `initialize` answered here."""
        self.version: str | None = None
        """The protocol version that answer agreed on."""
        self._waiting = False
        """Whether a line in `replay` is a request or notification the SDK must serve (more than the handshake)."""
        self.eof = False
        self._buffer = b""
        self._handed_over = False
        self.arrivals: deque[float] = deque()
        """When each whole line of the rest (after the replay) arrived, read while the SDK was imported."""
        self._reading: tuple[threading.Thread, threading.Event] | None = None

    @classmethod
    def start(cls, tool_names: str) -> Early | None:
        """None where stdin and stdout are not both pipes or sockets."""
        for fd in (0, 1):
            try:
                mode = os.fstat(fd).st_mode
            except OSError:
                return None
            if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                return None
        return cls(tool_names)

    @property
    def unread(self) -> bytes:
        """What the SDK's transport must read before stdin itself: the replayed lines, then the rest."""
        return self.replayed + self._buffer

    @property
    def replayed(self) -> bytes:
        """The replayed lines, and the `tools/list` made up here after them."""
        probe = b""
        if self.initialize_id is not None:
            probe = encoded({"jsonrpc": "2.0", "id": PROBE_ID, "method": "tools/list"}) + b"\n"
        return b"".join(self.replay) + probe

    @property
    def rest(self) -> bytes:
        """What was read after the replayed lines, not yet served."""
        return self._buffer

    @property
    def settled(self) -> bool:
        """Whether `initialize` was answered here and nothing read since waits for the SDK: the session
        can go on without it (mcp/wire/front.py)."""
        return self.client is not None and not self._waiting

    @property
    def replayed_lines(self) -> int:
        """How many lines of `unread` come before the rest (and have no entry in `arrivals`)."""
        return len(self.replay) + (self.initialize_id is not None)

    @property
    def answered(self) -> set[int | str]:
        """Requests answered here or made up here: the SDK's answers to them are not sent."""
        return set() if self.initialize_id is None else {self.initialize_id, PROBE_ID}

    def answer_initialize(self, *, wait: bool) -> None:
        """Answer `initialize` if it is the first message (waiting for it when `wait`)."""
        if self._handed_over or self.initialize_id is not None:
            return
        line = self._line(None if wait else 0)
        if line is None:
            return
        message = _message(line)
        answer = _initialize_answer(message, self.instructions) if message is not None else None
        self.replay.append(line)
        if answer is None or message is None:
            self._handed_over = True
            self._waiting = True
            return
        self.initialize_id = message["id"]
        self.client = message["params"]
        self.version = answer["protocolVersion"]
        self._write({"jsonrpc": "2.0", "id": message["id"], "result": answer})

    def answer_listing(self, tools: Callable[[], list[dict[str, Any]]]) -> bool:
        """Answer `tools/list` with `tools()` if it comes next, soon; stop at anything else. Whether it was
        answered here (once: after the first call, the SDK sees every request)."""
        if self._handed_over or self.initialize_id is None:
            return False
        answered = False
        while (line := self._line(LIST_WAIT)) is not None:
            message = _message(line)
            method = message.get("method") if message is not None else None
            if message is not None and method == "notifications/initialized":
                self.replay.append(line)
                continue
            params = message.get("params") if message is not None else None
            if message is not None and method == "tools/list" and is_request_id(message.get("id")) and not params:
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": tools()}})
                answered = True
            else:
                self.replay.append(line)
                self._waiting = True
            break
        self._handed_over = True
        return answered

    def keep_reading(self) -> None:
        """Read stdin in a thread while the SDK is imported, noting when each request arrives."""
        if self.eof or self._reading is not None:
            return
        now = time.monotonic()
        self.arrivals.extend(now for _ in range(self._buffer.count(b"\n")))
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                ready, _, _ = select.select([0], [], [], 0.01)
                if not ready:
                    continue
                data = os.read(0, 1 << 16)
                if not data:  # the pipes see the end of file again
                    return
                now = time.monotonic()
                self.arrivals.extend(now for _ in range(data.count(b"\n")))
                self._buffer += data

        thread = threading.Thread(target=read, name="aai-early-stdin", daemon=True)
        self._reading = (thread, stop)
        thread.start()

    def stop_reading(self) -> None:
        if self._reading is not None:
            thread, stop = self._reading
            stop.set()
            thread.join()

    def _line(self, timeout: float | None) -> bytes | None:
        """The next whole line of stdin, waiting up to `timeout` seconds (None: as long as it takes)."""
        while b"\n" not in self._buffer and not self.eof:
            ready, _, _ = select.select([0], [], [], timeout)
            if not ready:
                return None
            data = os.read(0, 1 << 16)
            if not data:
                self.eof = True
            self._buffer += data
        if b"\n" not in self._buffer:
            return None
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line + b"\n"

    @staticmethod
    def _write(message: dict[str, Any]) -> None:
        data = encoded(message) + b"\n"
        while data:
            data = data[os.write(1, data) :]


def listing(gateway: Gateway) -> list[dict[str, Any]]:
    """What `tools/list` answers for the gateway as it is."""
    settings = gateway.settings
    return tool_list(gateway, Names(gateway.apps(), settings.platform, settings.tool_names))


def _message(line: bytes) -> dict[str, Any] | None:
    message = read(line)
    return message.body if isinstance(message, Message) else None


def _initialize_answer(message: dict[str, Any], instructions: str) -> dict[str, Any] | None:
    """The SDK's answer to a well-formed `initialize`; None for anything the SDK should judge itself."""
    request_id, params = message.get("id"), message.get("params")
    if message.get("method") != "initialize" or not is_request_id(request_id):
        return None
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return None
    version, client = params.get("protocolVersion"), params.get("clientInfo")
    if not isinstance(version, str) or not isinstance(client, dict):
        return None
    if not isinstance(client.get("name"), str) or not isinstance(client.get("version"), str):
        return None
    return {
        "capabilities": CAPABILITIES,
        "instructions": instructions,
        "protocolVersion": version if version in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }

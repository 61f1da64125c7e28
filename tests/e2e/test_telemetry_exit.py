"""A collector that is down or never answers does not hold the gateway's exit: the installed `aai-gateway
--mcp` exits soon after its stdin closes, and its log says what was not exported."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support import gateway_command, read_line

pytestmark = pytest.mark.e2e

PROTOCOL = "2025-11-25"
BOUND = 6.0
"""Seconds: generous; a dead collector used to hold the exit for 18 to 25 s."""


@contextmanager
def collector(kind: str) -> Iterator[str]:
    """A dead collector's URL: "refusing", a loopback port nothing listens on; "silent", a listening
    socket that takes connections (the kernel's backlog) and never reads or answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        if kind == "silent":
            listener.listen(64)
            yield url
            return
    yield url


def send(proc: subprocess.Popen[str], request_id: int | None, method: str, params: dict[str, object]) -> None:
    message: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        message["id"] = request_id
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


@pytest.mark.hostile("telemetry")
@pytest.mark.parametrize("kind", ["refusing", "silent"])
def test_a_dead_collector_does_not_hold_the_exit(kind: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"HOME": str(home)}
    with collector(kind) as endpoint:
        env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        with (
            (tmp_path / "stderr.log").open("w") as stderr,
            subprocess.Popen(
                [gateway_command(), "--mcp"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
                text=True,
            ) as proc,
        ):
            try:
                client = {"name": "exit-test", "version": "1"}
                send(proc, 1, "initialize", {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": client})
                assert json.loads(read_line(proc, 30))["id"] == 1
                send(proc, None, "notifications/initialized", {})
                send(proc, 2, "tools/call", {"name": "aai_exec", "arguments": {"app": "no.such.app", "tool": "x"}})
                assert "no.such.app" in read_line(proc, 30)
                assert proc.stdin is not None
                proc.stdin.close()
                closed = time.monotonic()
                proc.wait(timeout=60)
                took = time.monotonic() - closed
            finally:
                if proc.poll() is None:
                    proc.kill()
        written = (tmp_path / "stderr.log").read_text()
        assert took < BOUND, f"the gateway took {took:.1f} s to exit after stdin closed"
        assert "telemetry: the last spans and metrics were not exported within 1.5 s of exit" in written
        assert "dropped: 1 of 1 spans for the OTEL_EXPORTER_OTLP_* endpoint (OTLP/HTTP), and the metrics" in written

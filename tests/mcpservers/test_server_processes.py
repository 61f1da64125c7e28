"""Servers whose processes misbehave: ignore EOF and SIGTERM, leave children behind, exit while a child
holds their output; and gateways ended by a signal. No process a server started outlives the gateway."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from tests.e2e.mcp_client import error_of, http_session, stdio_session, text_of, web_gateway
from tests.mcpservers.servers import alive, descriptor, hostile, install, marked
from tests.mcpservers.test_mcp_apps import env_of, exec_
from tests.support import until

pytestmark = pytest.mark.anyio

MODES = ["--mcp", "--web"]


def started_by(home: Path) -> list[int]:
    """Live processes whose environment holds `HOME=home`: the gateway, what it started, and their children."""
    needle = f"HOME={home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0") and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@contextmanager
def killing_leftovers(home: Path) -> Iterator[None]:
    """Whatever happens in the test, no process of its gateway is left running after it."""
    try:
        yield
    finally:
        for pid in started_by(home):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@asynccontextmanager
async def served(tmp_path: Path, mode: str, *docs: dict[str, Any]) -> AsyncIterator[ClientSession]:
    home = tmp_path / "home"
    install(home / ".aai", *docs)
    log = tmp_path / "gateway.log"
    if mode == "--mcp":
        async with stdio_session(env_of(home), log) as session:
            yield session
    else:
        with web_gateway(env_of(home), log) as url:
            async with http_session(url) as session:
                yield session


def gateway_pid(home: Path) -> int:
    (pid,) = [pid for pid in started_by(home) if b"aai-gateway" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    return pid


SERVERS: dict[str, dict[str, Any]] = {
    "ignores EOF and SIGTERM": {"ignoreEof": True, "ignoreTerm": True},
    "left a child": {"calls": {"echo": [{"fork": 120}]}},
}


@pytest.mark.hostile("mcp-server")
@pytest.mark.parametrize("server", list(SERVERS))
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
@pytest.mark.parametrize("mode", MODES)
async def test_no_server_outlives_a_gateway_ended_by_a_signal(
    tmp_path: Path, mode: str, sig: signal.Signals, server: str
) -> None:
    mark = uuid.uuid4().hex
    home = tmp_path / "home"
    app = descriptor("mcp.hostile", hostile(tmp_path / "plan.json", SERVERS[server], mark=mark))
    with killing_leftovers(home):
        pids: list[int] = []
        async with served(tmp_path, mode, app) as session:
            assert text_of(await exec_(session, "mcp.hostile", "echo", {"n": 1}))
            pids = marked(mark)
            assert len(pids) == (2 if server == "left a child" else 1), pids
            gateway = gateway_pid(home)
            os.kill(gateway, sig)
            await until(lambda: not alive(gateway), 15, "the gateway to end")
        await until(lambda: not started_by(home), 15, "every process of the gateway to end")
        # A process on its way out has no environment left to read, so `started_by` misses it before it is gone.
        await until(lambda: not [pid for pid in pids if alive(pid)], 15, "the server's processes to end")


@pytest.mark.hostile("mcp-server")
@pytest.mark.parametrize("mode", MODES)
async def test_a_server_that_exits_while_its_child_runs_on(tmp_path: Path, mode: str) -> None:
    """The child closes its stdio, but under uvloop it used to keep copies of the server's pipes, so the
    gateway did not see the server go: the call hung until its timeout, and so did the next one."""
    mark = uuid.uuid4().hex
    home = tmp_path / "home"
    plan = {
        "tools": [{"name": name, "inputSchema": {"type": "object"}} for name in ("echo", "crash")],
        "calls": {"crash": [{"fork": 120}, {"stderr": "going away now"}, {"exit": 3}]},
    }
    app = descriptor("mcp.hostile", hostile(tmp_path / "plan.json", plan, mark=mark))
    with killing_leftovers(home):
        async with served(tmp_path, mode, app) as session:
            assert text_of(await exec_(session, "mcp.hostile", "echo", {"n": 1}))
            (server,) = marked(mark)
            assert sorted(int(fd.name) for fd in Path(f"/proc/{server}/fd").iterdir()) == [0, 1, 2]
            with anyio.fail_after(20):  # the call's own timeout is 30 s
                error = await error_of(session, "aai_exec", {"app": "mcp.hostile", "tool": "crash", "args": {}})
            assert error.data is not None
            assert error.data["type"] == "APP_NOT_RUNNING", error
            assert "mcp.hostile exited with code 3 during the call; it said: going away now" in error.data["detail"]
            with anyio.fail_after(20):
                again = await exec_(session, "mcp.hostile", "echo", {"n": 2})
            assert text_of(again) == '{"n": 2}'
            (restarted,) = marked(mark)  # the child the first one left went with its process group
            assert restarted != server

"""The whole path for real: SDK client → installed `aai-gateway --mcp` → private DBus bus → real apps."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.support import (
    FIXED_TOOLS,
    TEST_APPS,
    Bus,
    Mpv,
    gateway_command,
    install_descriptor,
    read_line,
    silent_wav,
    stop,
    wait_until,
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

HOSTILE = [
    "quote \" and ' and \\ backslash",
    '" & (do shell script "id") & "',
    "$(touch /tmp/aai-pwned) `id` ; rm -rf /",
    "line one\nline two\r\n\ttab",
    "Unicode: 提醒事项 — émoji 🎉 — RTL עברית",
    "x" * 100_000,
]


def home_with(tmp_path: Path, *descriptors: Path) -> Path:
    home = tmp_path / "home"
    for source in descriptors:
        install_descriptor(home / ".aai", source)
    return home


def env_for(bus: Bus, home: Path) -> dict[str, str]:
    return {"HOME": str(home), "DBUS_SESSION_BUS_ADDRESS": bus.address, "AAI_PLATFORM": "linux"}


async def test_list_guide_and_exec_every_basic_type(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    home = home_with(tmp_path, TEST_APPS / "dev.aai.echo" / "aai.json")
    async with stdio_session(env_for(bus, home), tmp_path / "stderr.log") as session:
        listed = await session.list_tools()
        assert [t.name for t in listed.tools] == [
            *FIXED_TOOLS,
            "app_dev_aai_echo",
        ]
        assert listed.tools[7].description == (
            "【Echo|回声】The test suite's own DBus service: echoes values of every basic type. "
            "Aliases: echo, test app. Call to get guide."
        )
        assert listed.tools[7].input_schema == {"type": "object", "properties": {}}
        assert listed.tools[2].input_schema["required"] == ["app", "tool"]

        guide = text_of(await session.call_tool("app_dev_aai_echo", {}))
        assert guide.startswith("# Echo Operation Guide\n\n## App Info\n\n- ID: dev.aai.echo\n- Platform: linux\n")
        assert "### describe\n\nReport every argument back as JSON" in guide
        assert "- count (integer, required)" in guide
        assert '- sep (string, optional): one of ",", " ", "-"; default ","' in guide
        assert guide.rstrip().endswith("Use aai_exec tool to execute operations.")

        args: dict[str, Any] = {"name": "n", "count": 2**31 - 1, "ratio": -0.125, "flag": True, "tags": ["a", "β"]}
        described = await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "describe", "args": args})
        assert json.loads(text_of(described)) == args

        for value in HOSTILE:
            echoed = await session.call_tool(
                "aai_exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": value}}
            )
            assert text_of(echoed) == value
        assert not Path("/tmp/aai-pwned").exists()

        added = await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "add", "args": {"a": 41}})
        assert text_of(added) == "42"
        scaled = await session.call_tool(
            "aai_exec", {"app": "dev.aai.echo", "tool": "scale", "args": {"value": 1.5, "factor": 3}}
        )
        assert json.loads(text_of(scaled)) == 4.5
        negated = await session.call_tool(
            "aai_exec", {"app": "dev.aai.echo", "tool": "negate", "args": {"flag": False}}
        )
        assert text_of(negated) == "true"
        joined = await session.call_tool(
            "aai_exec", {"app": "dev.aai.echo", "tool": "join", "args": {"parts": ["x", "y", "z"], "sep": "-"}}
        )
        assert text_of(joined) == "x-y-z"


async def test_error_paths_keep_the_gateway_serving(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    home = home_with(tmp_path, TEST_APPS / "dev.aai.echo" / "aai.json")
    async with stdio_session(env_for(bus, home), tmp_path / "stderr.log") as session:

        async def exec_error(app: str, tool: str, args: dict[str, Any]) -> tuple[int, str, str]:
            error = await error_of(session, "aai_exec", {"app": app, "tool": tool, "args": args})
            assert isinstance(error.data, dict)
            return error.code, error.data["type"], error.data["detail"]

        code, kind, detail = await exec_error("dev.aai.ecko", "echo", {"text": "x"})
        assert (code, kind) == (-32002, "APP_NOT_FOUND")
        assert "Did you mean 'dev.aai.echo'" in detail

        error = await error_of(session, "app:no.such.app", {})
        assert (error.code, error.data) == (-32002, {"type": "APP_NOT_FOUND", "detail": error.data["detail"]})

        code, kind, detail = await exec_error("dev.aai.echo", "ecko", {})
        assert (code, kind) == (-32003, "TOOL_NOT_FOUND")
        assert "Did you mean 'echo'" in detail

        code, kind, detail = await exec_error(
            "dev.aai.echo", "describe", {"name": "n", "count": "two", "ratio": 1, "flag": True, "tags": []}
        )
        assert (code, kind) == (-32005, "INVALID_PARAMS")
        assert detail == 'args.count: must be an integer, got a string ("two")'
        code, kind, detail = await exec_error("dev.aai.echo", "echo", {})
        assert (code, kind, detail) == (-32005, "INVALID_PARAMS", "args: missing required field 'text'")
        code, kind, detail = await exec_error("dev.aai.echo", "add", {"a": 2**40})
        assert (code, kind) == (-32005, "INVALID_PARAMS")
        assert "argument 'a' must be a 32-bit integer" in detail

        code, kind, detail = await exec_error("dev.aai.echo", "missing", {})
        assert (code, kind) == (-32001, "AUTOMATION_FAILED")
        assert "no method NoSuchMethod" in detail

        code, kind, detail = await exec_error("dev.aai.echo", "fail", {"message": "the disk is full"})
        assert (code, kind) == (-32001, "AUTOMATION_FAILED")
        assert "dev.aai.Echo.Error.Failed: the disk is full" in detail

        code, kind, detail = await exec_error("dev.aai.echo", "sleep", {"seconds": 5})
        assert (code, kind) == (-32008, "TIMEOUT")
        assert "within 1 s" in detail

        error = await error_of(session, "web_discover", {"url": "http://example.com"})
        assert (error.code, error.data["type"]) == (-32004, "PERMISSION_DENIED")

        error = await error_of(session, "no-such-tool", {})
        assert (error.code, error.data["type"]) == (-32602, "TOOL_NOT_FOUND")  # a protocol error: no such tool

        bye = await session.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "exit", "args": {}})
        assert text_of(bye) == "bye"
        wait_until(lambda: not bus.has_owner("dev.aai.Echo"), 10, "the echo app to leave the bus")
        code, kind, detail = await exec_error("dev.aai.echo", "echo", {"text": "anyone?"})
        assert (code, kind) == (-32009, "APP_NOT_RUNNING")
        assert "dev.aai.Echo is not on the session bus" in detail

        listed = await session.list_tools()
        assert listed.tools[7].name == "app_dev_aai_echo"


async def test_mpv_driven_through_mpris(bus: Bus, mpv: Mpv, tmp_path: Path) -> None:
    home = home_with(tmp_path, TEST_APPS / "io.mpv" / "aai.json")
    track = silent_wav(tmp_path / "silence.wav")
    async with stdio_session(env_for(bus, home), tmp_path / "stderr.log") as session:
        names = [t.name for t in (await session.list_tools()).tools]
        assert "app_io_mpv" in names
        guide = text_of(await session.call_tool("app_io_mpv", {}))
        assert "### open_uri" in guide

        async def run(tool: str, args: dict[str, Any] | None = None) -> None:
            result = await session.call_tool("aai_exec", {"app": "io.mpv", "tool": tool, "args": args or {}})
            assert not result.is_error, result

        await run("open_uri", {"uri": track.as_uri()})
        wait_until(lambda: mpv.property("path") == str(track), 10, "mpv to load the track")
        wait_until(lambda: mpv.property("time-pos") is not None, 10, "mpv to start the track")
        await run("pause")
        wait_until(lambda: mpv.property("pause") is True, 5, "mpv to pause")
        await run("play")
        wait_until(lambda: mpv.property("pause") is False, 5, "mpv to play")
        await run("play_pause")
        wait_until(lambda: mpv.property("pause") is True, 5, "mpv to toggle to paused")
        before = float(mpv.property("time-pos"))
        await run("seek", {"offset": 10_000_000})
        wait_until(lambda: float(mpv.property("time-pos") or 0) >= before + 9, 5, "mpv to seek 10 s forward")
        await run("set_volume", {"level": 0.3})
        wait_until(lambda: mpv.property("volume") == 30, 5, "mpv's volume to be 30 %")
        volume = await session.call_tool("aai_exec", {"app": "io.mpv", "tool": "volume", "args": {}})
        assert json.loads(text_of(volume)) == pytest.approx(0.3)
        metadata = json.loads(
            text_of(await session.call_tool("aai_exec", {"app": "io.mpv", "tool": "metadata", "args": {}}))
        )
        assert metadata["xesam:title"] == "silence.wav"
        assert metadata["mpris:length"] == 30_000_000
        status = await session.call_tool("aai_exec", {"app": "io.mpv", "tool": "playback_status", "args": {}})
        assert text_of(status) == "Paused"
        await run("stop")
        wait_until(lambda: mpv.property("idle-active") is True, 5, "mpv to stop")


async def test_service_nothing_provides_is_not_running(bus: Bus, tmp_path: Path) -> None:
    home = home_with(tmp_path, TEST_APPS / "dev.aai.echo" / "aai.json")
    async with stdio_session(env_for(bus, home), tmp_path / "stderr.log") as session:
        error = await error_of(session, "aai_exec", {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "x"}})
        assert error.code == -32009


def test_stdout_carries_only_protocol_and_logs_go_to_stderr_and_file(bus: Bus, tmp_path: Path) -> None:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    broken = home / ".aai" / "broken.app"
    broken.mkdir()
    (broken / "aai.json").write_text("{ not json")
    allow_raw = {"consent": {"rules": [{"caller": "raw", "app": "dev.aai.echo", "decision": "allow"}]}}
    (home / ".aai" / "config.json").write_text(json.dumps(allow_raw))  # a raw client cannot be asked
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "aai_exec", "arguments": {"app": "dev.aai.echo", "tool": "echo", "args": {"text": "x"}}},
        },
    ]
    proc = subprocess.Popen(
        [gateway_command(), "--mcp", "--log-level", "debug"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=bus.env(HOME=str(home)),
    )
    assert proc.stdin is not None
    assert proc.stderr is not None
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    proc.stdin.flush()
    replies = [json.loads(read_line(proc, 30)) for _ in range(3)]
    proc.stdin.close()
    proc.wait(30)
    stderr = proc.stderr.read()
    stop(proc)
    assert sorted(r.get("id") for r in replies) == [1, 2, 3]
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    replies.sort(key=lambda r: r["id"])
    assert replies[2]["result"]["structuredContent"]["error"]["code"] == -32009
    assert "broken.app/aai.json: invalid JSON at line 1, column 3" in stderr
    log_file = home / ".aai" / "logs" / "gateway.log"
    assert "invalid JSON at line 1, column 3" in log_file.read_text()
    assert "raw dev.aai.echo:echo failed APP_NOT_RUNNING" in log_file.read_text()

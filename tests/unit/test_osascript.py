"""The osascript executor against a recording stand-in `osascript` on PATH: what it is given, how its
answers and failures come back, and that a timeout kills it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.validate import check_document
from aai_gateway.errors import (
    AaiError,
    AppNotFound,
    AppNotRunning,
    AutomationFailed,
    AutomationNotSupported,
    InvalidParams,
    PermissionDenied,
    ScriptParseError,
    Timeout,
)
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.osascript import APPLE_EVENT_SCRIPT, OsascriptExecutor, parse_output
from aai_gateway.executors.osascript_errors import translate

pytestmark = pytest.mark.anyio

STANDINS = Path(__file__).parents[1] / "standins"

ECHO_TOOL = {
    "name": "echo",
    "description": "Echo",
    "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "script": 'return "${text}"',
}


def multi(automation: str = "applescript", **tool: Any) -> Descriptor:
    doc = {
        "schema_version": "1.0",
        "appId": "com.example.notes",
        "name": "Notes",
        "platforms": {"macos": {"automation": automation, "tools": [{**ECHO_TOOL, **tool}]}},
    }
    loaded = check_document(doc, "test")
    assert loaded.descriptor, loaded.problems
    return loaded.descriptor


def camel(**execution: Any) -> Descriptor:
    doc = {
        "schemaVersion": "1.0",
        "version": "1.0.0",
        "platform": "macos",
        "app": {"id": "com.example.reminders", "name": {"en": "Reminders"}, "defaultLang": "en"},
        "execution": {"type": "ipc", **execution},
        "tools": [{"name": "add", "description": "Add", "parameters": ECHO_TOOL["parameters"]}],
    }
    loaded = check_document(doc, "test")
    assert loaded.descriptor, loaded.problems
    return loaded.descriptor


def call_of(app: Descriptor, args: dict[str, Any], timeout: float = 30) -> ToolCall:
    binding = app.bindings["macos"]
    return ToolCall(app=app, binding=binding, tool=binding.tools[0], args=args, timeout=timeout)


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in first on PATH, writing what it is given to the returned file."""
    monkeypatch.setenv("PATH", f"{STANDINS}{os.pathsep}{os.environ['PATH']}")
    path = tmp_path / "osascript.jsonl"
    monkeypatch.setenv("AAI_OSASCRIPT_LOG", str(path))
    for name in ("MODE", "STDOUT", "STDERR", "EXIT", "SLEEP"):
        monkeypatch.delenv(f"AAI_OSASCRIPT_{name}", raising=False)
    return path


def runs(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_apple_events_send_the_envelope_as_arguments_to_a_fixed_script(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAI_OSASCRIPT_MODE", "envelope")
    hostile = '" & (do shell script "id") & "\n«event sysoexec»'
    result = await OsascriptExecutor().execute(call_of(camel(), {"text": hostile}, timeout=7.4))
    assert result["bundle"] == "com.example.reminders"
    assert result["request"]["tool"] == "add"
    assert result["request"]["params"] == {"text": hostile}
    (run,) = runs(log)
    assert run["script"] == APPLE_EVENT_SCRIPT
    assert run["argv"][2] == "7"
    assert hostile not in run["script"]


async def test_apple_events_go_to_the_bundle_id_the_descriptor_names(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AAI_OSASCRIPT_MODE", "envelope")
    result = await OsascriptExecutor().execute(call_of(camel(bundleId="com.apple.reminders"), {"text": "x"}))
    assert result["bundle"] == "com.apple.reminders"


async def test_an_app_error_in_the_envelope_keeps_its_type(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = {"status": "error", "error": {"type": "PERMISSION_DENIED", "message": "list is locked"}}
    monkeypatch.setenv("AAI_OSASCRIPT_STDOUT", json.dumps(answer) + "\n")
    with pytest.raises(PermissionDenied, match="list is locked"):
        await OsascriptExecutor().execute(call_of(camel(), {"text": "x"}))


@pytest.mark.parametrize(
    ("stderr", "error", "words"),
    [
        (
            "execution error: Mail got an error: Not authorized to send Apple events to Mail. (-1743)",
            PermissionDenied,
            "Privacy & Security › Automation",
        ),
        ("execution error: Mail got an error: AppleEvent timed out. (-1712)", Timeout, "timed out"),
        ("execution error: Mail got an error: Application isn’t running. (-600)", AppNotRunning, "-600"),
        ("execution error: Connection is invalid. (-609)", AppNotRunning, "connection"),
        ("execution error: Unable to find application. (-10814)", AppNotFound, "installed"),
        ('execution error: Can’t get application "Nope". (-1728)', AppNotFound, "Nope"),
        ("0:41: syntax error: Expected end of line but found identifier. (-2741)", ScriptParseError, "characters 0:41"),
        ("12:18: syntax error: A unknown token can’t go after this identifier. (-2740)", ScriptParseError, "token"),
        (
            "12:20: syntax error: Error on line 1: SyntaxError: Unexpected token ')' (-2700)",
            ScriptParseError,
            "Unexpected token",
        ),
        ("execution error: User canceled. (-128)", PermissionDenied, "cancelled"),
        ("execution error: Mail got an error: Can’t get mailbox 3. (-1728)", AutomationFailed, "mailbox 3"),
        ("execution error: Error: Error: Can't get object. (-1728)", AutomationFailed, "Can't get object"),
        ("something unexpected", AutomationFailed, "something unexpected"),
        ("", AutomationFailed, "exited with 1"),
    ],
)
def test_osascript_failures_map_to_the_gateway_errors(stderr: str, error: type[AaiError], words: str) -> None:
    translated = translate(stderr + "\n", 1, "com.apple.mail's send_email")
    assert type(translated) is error, translated
    assert words in str(translated)
    assert "com.apple.mail's send_email" in str(translated)


async def test_a_failed_run_raises_the_mapped_error(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAI_OSASCRIPT_STDERR", "execution error: Not authorized to send Apple events. (-1743)\n")
    monkeypatch.setenv("AAI_OSASCRIPT_EXIT", "1")
    with pytest.raises(PermissionDenied):
        await OsascriptExecutor().execute(call_of(camel(), {"text": "x"}))


async def test_a_timeout_kills_osascript(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AAI_OSASCRIPT_SLEEP", "600")
    with pytest.raises(Timeout, match="osascript was stopped"):
        await OsascriptExecutor().execute(call_of(camel(), {"text": "x"}, timeout=0.5))
    pid = runs(log)[0]["pid"]
    assert not Path(f"/proc/{pid}").exists(), "osascript was left running"


async def test_without_osascript_the_call_is_not_supported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AutomationNotSupported, match="only on macOS"):
        await OsascriptExecutor().execute(call_of(camel(), {"text": "x"}))


@pytest.mark.parametrize(
    ("text", "parser", "expected"),
    [
        ("hello", "result as text", "hello"),
        ('{"success":true, "message_id":"generated"}', "result as text", {"success": True, "message_id": "generated"}),
        ("[1, 2]", "result as text", [1, 2]),
        ("{not json", "result as text", "{not json"),
        ("3", "result as text", "3"),
        ("", "result as text", ""),
        ("3", "json", 3),
        ('"x"', "json", "x"),
    ],
)
def test_output_parsers(text: str, parser: str, expected: Any) -> None:
    assert parse_output(text, parser, "x") == expected


def test_the_json_parser_refuses_text() -> None:
    with pytest.raises(AutomationFailed, match="not JSON"):
        parse_output("hello", "json", "x")


async def test_arguments_beyond_the_system_limit_are_refused_clearly(log: Path) -> None:
    with pytest.raises(InvalidParams, match="too large"):
        await OsascriptExecutor().execute(call_of(multi(), {"text": "x" * 3_000_000}))

"""Windows COM end to end: SDK client → installed `aai-gateway --mcp` (AAI_PLATFORM=windows) → the
pywin32 stand-in on PYTHONPATH, whose object model writes every use to AAI_COM_LOG."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.support import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

STANDIN = ROOT / "tests" / "standins" / "pywin32"
SEED = ROOT / "tests" / "golden" / "seeds" / "seed003-mail-multi.json"
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}

MISSING = {
    "schema_version": "1.0",
    "appId": "com.example.missing",
    "name": "Missing",
    "description": "An app whose COM class is not installed",
    "platforms": {
        "windows": {
            "automation": "com",
            "progid": "Missing.Application",
            "tools": [
                {
                    "name": "open",
                    "description": "Open it",
                    "parameters": {"type": "object", "properties": {}},
                    "script": [{"action": "create", "var": "app"}, {"action": "return", "value": "opened"}],
                }
            ],
        }
    },
}
SLOW = {
    "schema_version": "1.0",
    "appId": "com.example.slow",
    "name": "Slow",
    "description": "An app that never answers",
    "platforms": {
        "windows": {
            "automation": "com",
            "tools": [
                {
                    "name": "wait",
                    "description": "Wait for ever",
                    "parameters": {"type": "object", "properties": {}},
                    "timeout": 0.5,
                    "script": [
                        {"action": "create", "var": "b", "progid": "Test.Blocking"},
                        {"action": "call", "object": "b", "method": "Wait"},
                    ],
                }
            ],
        }
    },
}
ENVELOPE = {
    "schemaVersion": "1.0",
    "version": "1.0.0",
    "platform": "windows",
    "app": {"id": "com.example.envelope", "name": {"en": "Envelope"}, "defaultLang": "en"},
    "execution": {"type": "com", "progid": "Test.Envelope"},
    "tools": [
        {"name": "add", "description": "Add an item", "parameters": TEXT},
        {"name": "refuse", "description": "Always refused", "parameters": TEXT},
    ],
}


def install(home: Path, app_id: str, document: dict[str, Any] | Path) -> None:
    target = home / ".aai" / app_id / "aai.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(document, Path):
        shutil.copyfile(document, target)
    else:
        target.write_text(json.dumps(document))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    assert json.loads(SEED.read_text())["appId"] == "com.apple.mail"
    install(home, "com.apple.mail", SEED)
    install(home, "com.example.missing", MISSING)
    install(home, "com.example.slow", SLOW)
    install(home, "com.example.envelope", ENVELOPE)
    return {
        "HOME": str(home),
        "AAI_PLATFORM": "windows",
        "PYTHONPATH": str(STANDIN),
        "AAI_COM_LOG": str(tmp_path / "com.jsonl"),
    }


def recorded(env: dict[str, str]) -> list[dict[str, Any]]:
    log = Path(env["AAI_COM_LOG"])
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def test_the_seed_outlook_tool_sends_one_mail(env: dict[str, str], tmp_path: Path) -> None:
    args = {"to": "ada@example.com", "subject": 'Re: "quotes" & $(id)', "body": "Line one\r\nLine two\x00🎉"}
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        sent = await session.call_tool("aai_exec", {"app": "com.apple.mail", "tool": "send_email", "args": args})
        assert json.loads(text_of(sent)) == {"success": True, "message_id": "generated"}
        direct = await session.call_tool("com.apple.mail:send_email", args)
        assert json.loads(text_of(direct)) == {"success": True, "message_id": "generated"}
    one_mail = [
        {"op": "create", "progid": "Outlook.Application"},
        {"op": "call", "object": "Outlook.Application", "method": "CreateItem", "args": [0]},
        {"op": "set", "object": "Outlook.MailItem", "property": "To", "value": args["to"]},
        {"op": "set", "object": "Outlook.MailItem", "property": "Subject", "value": args["subject"]},
        {"op": "set", "object": "Outlook.MailItem", "property": "Body", "value": args["body"]},
        {"op": "call", "object": "Outlook.MailItem", "method": "Send", "args": []},
    ]
    assert recorded(env) == one_mail + one_mail


async def test_com_failures_and_a_timeout_keep_the_gateway_serving(env: dict[str, str], tmp_path: Path) -> None:
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        error = await error_of(session, "aai_exec", {"app": "com.example.missing", "tool": "open", "args": {}})
        assert error.code == -32002
        assert error.data == {
            "type": "APP_NOT_FOUND",
            "detail": "Windows knows no ProgID 'Missing.Application' (invalid class string); is the app installed?",
        }

        error = await error_of(session, "aai_exec", {"app": "com.example.slow", "tool": "wait", "args": {}})
        assert error.code == -32008
        assert isinstance(error.data, dict)
        assert "com.example.slow's wait did not finish within 0.5 s" in error.data["detail"]

        # The abandoned call still waits inside the app; other calls go on.
        args = {"to": "ada@example.com", "subject": "s", "body": "b"}
        sent = await session.call_tool("aai_exec", {"app": "com.apple.mail", "tool": "send_email", "args": args})
        assert json.loads(text_of(sent)) == {"success": True, "message_id": "generated"}
    assert [e["op"] for e in recorded(env)][:2] == ["create", "call"]
    assert recorded(env)[1]["method"] == "Wait"


async def test_a_shape_c_descriptor_sends_its_envelope_to_execute(env: dict[str, str], tmp_path: Path) -> None:
    params = {"text": 'milk " & $(id) \n 牛奶'}
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        added = await session.call_tool("aai_exec", {"app": "com.example.envelope", "tool": "add", "args": params})
        assert json.loads(text_of(added)) == {"tool": "add", "params": params}
        error = await error_of(session, "aai_exec", {"app": "com.example.envelope", "tool": "refuse", "args": {}})
        assert (error.code, error.data) == (-32004, {"type": "PERMISSION_DENIED", "detail": "not today"})
    create, execute = recorded(env)[:2]
    assert create == {"op": "create", "progid": "Test.Envelope"}
    assert (execute["object"], execute["method"]) == ("Test.Envelope", "Execute")
    request = json.loads(execute["args"][0])
    assert request.pop("request_id")
    assert request == {"version": "1.0", "tool": "add", "params": params}

"""macOS tools through the installed gateway, with `AAI_PLATFORM=macos` and a stand-in `osascript` on
PATH (tests/standins): the seeds' own Mail descriptor, a JXA tool run for real by Node against a
recording `Application()`, and the Apple Event envelope of shapes B and C."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.support import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

STANDINS = ROOT / "tests" / "standins"
SEED_MAIL = ROOT / "tests" / "golden" / "seeds" / "seed003-mail-multi.json"

HOSTILE = [
    "quote \" and ' and \\ backslash",
    '" & (do shell script "id") & "',
    "'); doShellScript('id'); ('",
    "$(touch /tmp/aai-pwned) `id` %COMSPEC%",
    "line one\nline two\r\n\ttab",
    "Unicode: 提醒事项 — émoji 🎉 — RTL עברית",
    "x" * 100_000,
]


def install(home: Path, app_id: str, doc: dict[str, Any]) -> None:
    folder = home / ".aai" / app_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "aai.json").write_text(json.dumps(doc, ensure_ascii=False))


def env_for(home: Path, log: Path, **extra: str) -> dict[str, str]:
    return {
        "HOME": str(home),
        "AAI_PLATFORM": "macos",
        "PATH": f"{STANDINS}{os.pathsep}{os.environ['PATH']}",
        "AAI_OSASCRIPT_LOG": str(log),
        **extra,
    }


def runs(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_the_seed_mail_example_sends_values_as_arguments_never_as_source(tmp_path: Path) -> None:
    home, log = tmp_path / "home", tmp_path / "osascript.jsonl"
    install(home, "com.apple.mail", json.loads(SEED_MAIL.read_text()))
    async with stdio_session(env_for(home, log, AAI_OSASCRIPT_MODE="argv"), tmp_path / "stderr.log") as session:
        for value in HOSTILE:
            args = {"to": "alice@example.com", "subject": value, "body": value[::-1]}
            result = json.loads(
                text_of(
                    await session.call_tool("aai_exec", {"app": "com.apple.mail", "tool": "send_email", "args": args})
                )
            )
            assert value in result, "the subject must arrive as one argument, byte-identical"
            assert value[::-1] in result
        searched = await session.call_tool("com.apple.mail:search_emails", {"query": '" & (do shell script "id") & "'})
        assert '" & (do shell script "id") & "' in json.loads(text_of(searched))
    recorded = runs(log)
    assert len(recorded) == len(HOSTILE) + 1
    sources = {r["script"] for r in recorded[:-1]}
    assert len(sources) == 1, "the script never depends on the values"
    (source,) = sources
    assert "on run argv" in source
    assert 'tell application "Mail"' in source
    for value in HOSTILE:
        assert value not in source
    assert all(r["language"] == "AppleScript" for r in recorded)


async def test_jxa_runs_for_real_and_hostile_strings_arrive_as_data(tmp_path: Path) -> None:
    home, log, jxa_log = tmp_path / "home", tmp_path / "osascript.jsonl", tmp_path / "jxa.jsonl"
    canary = tmp_path / "pwned"
    hostile = [*HOSTILE, f'"); require("fs").writeFileSync("{canary}", "x"); ("', "${constructor}", "`${1+1}`"]
    install(
        home,
        "com.apple.notes",
        {
            "schema_version": "1.0",
            "appId": "com.apple.notes",
            "name": "Notes",
            "platforms": {
                "macos": {
                    "automation": "jxa",
                    "tools": [
                        {
                            "name": "create_note",
                            "description": "Create a note",
                            "parameters": {
                                "type": "object",
                                "properties": {"title": {"type": "string"}, "count": {"type": "integer"}},
                                "required": ["title", "count"],
                            },
                            "script": 'const notes = Application("Notes");\n'
                            'notes.make({new: "note", withProperties: {name: "${title}", body: `Re: ${title}`}});\n'
                            '"made " + ${count}',
                        }
                    ],
                }
            },
        },
    )
    env = env_for(home, log, AAI_JXA_LOG=str(jxa_log))
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        for n, value in enumerate(hostile):
            arguments = {"app": "com.apple.notes", "tool": "create_note", "args": {"title": value, "count": n}}
            assert text_of(await session.call_tool("aai_exec", arguments)) == f"made {n}"
    recorded = jxa_log.read_text()
    for value in hostile:
        assert json.dumps(value, ensure_ascii=False) in recorded or json.dumps(value) in recorded
        assert json.dumps(f"Re: {value}", ensure_ascii=False) in recorded or json.dumps(f"Re: {value}") in recorded
    assert not canary.exists()
    scripts = {r["script"] for r in runs(log)}
    assert len(scripts) == 1
    assert all(r["language"] == "JavaScript" for r in runs(log))


async def test_shape_c_on_macos_sends_one_apple_event_with_the_envelope(tmp_path: Path) -> None:
    home, log = tmp_path / "home", tmp_path / "osascript.jsonl"
    install(
        home,
        "com.example.reminders",
        {
            "schemaVersion": "1.0",
            "version": "1.0.0",
            "platform": "macos",
            "app": {"id": "com.example.reminders", "name": {"en": "Reminders"}, "defaultLang": "en"},
            "execution": {"type": "apple-events", "bundleId": "com.apple.reminders"},
            "tools": [
                {
                    "name": "create_reminder",
                    "description": "Create a reminder",
                    "parameters": {
                        "type": "object",
                        "properties": {"title": {"type": "string"}},
                        "required": ["title"],
                    },
                }
            ],
        },
    )
    async with stdio_session(env_for(home, log, AAI_OSASCRIPT_MODE="envelope"), tmp_path / "stderr.log") as session:
        arguments = {"app": "com.example.reminders", "tool": "create_reminder", "args": {"title": HOSTILE[1]}}
        result = json.loads(text_of(await session.call_tool("aai_exec", arguments)))
    assert result["bundle"] == "com.apple.reminders"
    assert result["request"]["params"] == {"title": HOSTILE[1]}
    assert HOSTILE[1] not in runs(log)[0]["script"]


async def test_osascript_failures_reach_the_agent_as_gateway_errors(tmp_path: Path) -> None:
    home, log = tmp_path / "home", tmp_path / "osascript.jsonl"
    install(home, "com.apple.mail", json.loads(SEED_MAIL.read_text()))
    env = env_for(
        home,
        log,
        AAI_OSASCRIPT_STDERR="execution error: Not authorized to send Apple events to Mail. (-1743)\n",
        AAI_OSASCRIPT_EXIT="1",
    )
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        arguments = {"app": "com.apple.mail", "tool": "search_emails", "args": {"query": "x"}}
        error = await error_of(session, "aai_exec", arguments)
        assert (error.code, error.data["type"]) == (-32004, "PERMISSION_DENIED")
        assert "Automation" in error.message or "Automation" in str(error.data)

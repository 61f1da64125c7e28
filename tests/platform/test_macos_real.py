"""Real osascript on macOS: the rewritten templates compile and run, and values arrive intact.
Skipped on every other system (the Linux suite covers the same code through a stand-in)."""

from __future__ import annotations

import shutil
import sys
from typing import Any

import pytest

from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.validate import check_document
from aai_gateway.errors import PermissionDenied, ScriptParseError
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.osascript import OsascriptExecutor

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform != "darwin" or not shutil.which("osascript"), reason="needs macOS osascript"),
]

HOSTILE = [
    "quote \" and ' and \\ backslash",
    '" & (do shell script "touch /tmp/aai-pwned") & "',
    "'); doShellScript('id'); ('",
    "line one\nline two\r\n\ttab",
    "Unicode: 提醒事项 — émoji 🎉 — RTL עברית",
    "x" * 100_000,
]

PARAMETERS = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "items": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["text"],
}


def app(automation: str, script: str, parser: str = "result as text") -> Descriptor:
    doc = {
        "schema_version": "1.0",
        "appId": "dev.aai.platform",
        "name": "Platform test",
        "platforms": {
            "macos": {
                "automation": automation,
                "tools": [
                    {
                        "name": "t",
                        "description": "t",
                        "parameters": PARAMETERS,
                        "script": script,
                        "output_parser": parser,
                    }
                ],
            }
        },
    }
    loaded = check_document(doc, "test")
    assert loaded.descriptor, loaded.problems
    return loaded.descriptor


async def run(descriptor: Descriptor, args: dict[str, Any]) -> Any:
    binding = descriptor.bindings["macos"]
    call = ToolCall(app=descriptor, binding=binding, tool=binding.tools[0], args=args, timeout=60)
    return await OsascriptExecutor().execute(call)


@pytest.mark.parametrize("value", HOSTILE)
async def test_applescript_whole_and_partial_literals(value: str) -> None:
    descriptor = app("applescript", 'set a to "${text}"\nset b to "<${text}>"\nreturn a & "|" & b')
    assert await run(descriptor, {"text": value}) == f"{value}|<{value}>"


async def test_applescript_typed_values_and_handlers() -> None:
    script = (
        "on twice(n)\n\treturn n * 2\nend twice\n"
        "set total to twice(${count}) + ${ratio}\n"
        'if ${flag} then return (total as text) & " " & (count of ${items}) & " " & "${text}"\n'
        'return "no"'
    )
    result = await run(
        app("applescript", script), {"text": "t", "count": 3, "ratio": 0.5, "flag": True, "items": ["a", "b"]}
    )
    assert result in ("6.5 2 t", "6,5 2 t")


async def test_applescript_records() -> None:
    script = 'return {title:"${text}", n:${count}, tags:${items}, nothing:missing value}'
    result = await run(app("applescript", script, "result as record"), {"text": 'a"b', "count": 4, "items": ["x"]})
    assert result == {"title": 'a"b', "n": 4, "tags": ["x"], "nothing": None}


@pytest.mark.parametrize("value", HOSTILE)
async def test_jxa_values_arrive_as_data(value: str) -> None:
    script = 'const s = "${text}"; const t = `<${text}>`; s + "|" + t + "|" + (${count} + 1)'
    assert await run(app("jxa", script), {"text": value, "count": 1}) == f"{value}|<{value}>|2"


async def test_a_script_that_does_not_compile_is_a_parse_error() -> None:
    with pytest.raises(ScriptParseError):
        await run(app("applescript", 'return "${text}" &&& 3'), {"text": "x"})


async def test_textedit_through_apple_events() -> None:
    script = (
        'tell application "TextEdit"\n'
        '\tset d to make new document with properties {text:"${text}"}\n'
        "\tset t to text of d\n\tclose d saving no\n\treturn t\nend tell"
    )
    try:
        assert await run(app("applescript", script), {"text": HOSTILE[1]}) == HOSTILE[1]
    except PermissionDenied as e:
        pytest.skip(f"this runner may not send Apple Events to TextEdit: {e}")

"""Real COM on Windows through pywin32: objects every Windows ships (Scripting.FileSystemObject,
WScript.Shell), with values as call arguments. Skipped elsewhere (Linux covers the same code through
the pywin32 stand-in in tests/standins)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.validate import check_document
from aai_gateway.errors import AppNotFound
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.com import ComExecutor

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sys.platform != "win32", reason="needs Windows COM")]

HOSTILE = [
    "quote \" and ' and \\ backslash",
    "%COMSPEC% $(Get-Process) `whoami` & calc.exe",
    "'); doShellScript('id'); ('",
    "Unicode: 提醒事项 — émoji 🎉 — RTL עברית",
]


def app(script: list[dict[str, Any]], progid: str = "Scripting.FileSystemObject") -> Descriptor:
    doc = {
        "schema_version": "1.0",
        "appId": "dev.aai.windows",
        "name": "Windows test",
        "platforms": {
            "windows": {
                "automation": "com",
                "progid": progid,
                "tools": [
                    {
                        "name": "t",
                        "description": "t",
                        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
                        "script": script,
                        "output_parser": "last_result",
                    }
                ],
            }
        },
    }
    loaded = check_document(doc, "test")
    assert loaded.descriptor, loaded.problems
    return loaded.descriptor


async def run(descriptor: Descriptor, args: dict[str, Any]) -> Any:
    binding = descriptor.bindings["windows"]
    call = ToolCall(app=descriptor, binding=binding, tool=binding.tools[0], args=args, timeout=60)
    return await ComExecutor().execute(call)


@pytest.mark.parametrize("value", HOSTILE)
async def test_file_system_object_takes_values_as_arguments(value: str) -> None:
    script: list[dict[str, Any]] = [
        {"action": "create", "var": "fso", "progid": "Scripting.FileSystemObject"},
        {"action": "call", "var": "name", "object": "fso", "method": "GetBaseName", "args": ["C:\\dir\\${text}.txt"]},
    ]
    assert await run(app(script), {"text": value.replace("\\", "_")}) == value.replace("\\", "_")


async def test_wscript_shell_answers_a_call() -> None:
    script: list[dict[str, Any]] = [
        {"action": "create", "var": "shell", "progid": "WScript.Shell"},
        {"action": "call", "var": "out", "object": "shell", "method": "ExpandEnvironmentStrings", "args": ["${text}"]},
    ]
    expanded = await run(app(script, "WScript.Shell"), {"text": "%SystemRoot%"})
    assert expanded.lower().endswith("windows")


async def test_an_unknown_progid_is_app_not_found() -> None:
    script = [{"action": "create", "var": "x", "progid": "Aai.DoesNotExist"}]
    with pytest.raises(AppNotFound):
        await run(app(script, "Aai.DoesNotExist"), {})

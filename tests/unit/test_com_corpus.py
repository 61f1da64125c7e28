"""Parameters never become code: hostile strings reach the COM objects byte-identical, as call arguments
and property values, through the seed's Outlook tool and a typed echo."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aai_gateway.descriptor.validate import check_document
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.com import ComExecutor
from tests.unit.test_com_actions import SEED, app, call_of, load_standin

PIECES = [
    '"',
    "'",
    "\\",
    '" & (do shell script "id") & "',
    "'); doShellScript('id'); ('",
    "$()",
    "$(touch /tmp/aai-com-pwned)",
    "`id`",
    "%COMSPEC%",
    "$(Get-Process)",
    "${text}",
    "${a}",
    "{0}",
    "\n",
    "\r",
    "\r\n",
    "\x00",
    "\t",
    "; rm -rf / #",
    "| cmd /c calc",
    "\u202e\u05e2\u05d1\u05e8\u05d9\u05ea\u202c",
    "🎉👩‍💻",
    "\ufeff",
]
BIG = [
    "x" * 100_000,
    ("\" & $(id) `id` \\ \x00\r\n🎉 \u05e2\u05d1\u05e8\u05d9\u05ea '); " * 4000)[:100_000],
]
HOSTILE = st.one_of(
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=20)), max_size=8).map("".join),
    st.sampled_from(BIG),
)

ECHO = [
    {"action": "create", "var": "v", "progid": "Test.Values"},
    {"action": "set", "object": "v", "property": "Value", "value": "${a}"},
    {"action": "call", "var": "echoed", "object": "v", "method": "Echo", "args": ["${a}", "<${b}>", "${b}"]},
    {"action": "return", "var": "echoed"},
]
ECHO_PARAMETERS = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Any:
    return load_standin(monkeypatch)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(strings=st.tuples(HOSTILE, HOSTILE, HOSTILE, HOSTILE, HOSTILE))
def test_hostile_strings_arrive_byte_identical(world: Any, strings: tuple[str, str, str, str, str]) -> None:
    to, subject, body, a, b = strings
    seed = check_document(json.loads(SEED.read_text()), str(SEED)).descriptor
    assert seed is not None
    binding = seed.bindings["windows"]
    mail = ToolCall(
        app=seed,
        binding=binding,
        tool=binding.tools[0],
        args={"to": "r" + to, "subject": subject, "body": body},
        timeout=30,
    )
    echo = call_of(app(ECHO, parameters=ECHO_PARAMETERS), {"a": a, "b": b})
    world.reset()
    executor = ComExecutor()

    async def both() -> tuple[Any, Any]:
        return await executor.execute(mail), await executor.execute(echo)

    sent, echoed = asyncio.run(both())
    assert sent == {"success": True, "message_id": "generated"}
    assert echoed == [a, f"<{b}>", b]
    sets = [(e["property"], e["value"]) for e in world.LOG if e["op"] == "set"]
    assert sets == [("To", "r" + to), ("Subject", subject), ("Body", body), ("Value", a)]
    [echo_call] = [e for e in world.LOG if e.get("method") == "Echo"]
    assert echo_call["args"] == [a, f"<{b}>", b]
    assert all(type(v) is str for _, v in sets)
    assert not Path("/tmp/aai-com-pwned").exists()

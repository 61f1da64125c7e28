"""`Gateway.batch` and the echo_gateway-wide cap on running operations, in-process against the real DBus echo app."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aai_gateway.consent import Answer, Question
from aai_gateway.errors import InvalidParams
from aai_gateway.service import MAX_BATCH, Caller, Gateway

pytestmark = pytest.mark.anyio

CLI = Caller(name="batch-test", transport="cli")


def echo(text: str) -> dict[str, Any]:
    return {"app": "dev.aai.echo", "tool": "echo", "args": {"text": text}}


async def test_more_calls_than_a_bus_connection_may_have_pending_all_succeed(echo_gateway: Gateway) -> None:
    """The bus lets one connection wait for 128 replies; 1,000 calls to one app wait for its 16 slots."""
    assert (echo_gateway.settings.max_concurrent_calls, echo_gateway.settings.max_calls_per_app) == (32, 16)
    outcomes = await asyncio.gather(
        *(echo_gateway.call("dev.aai.echo", "echo", {"text": str(i)}, CLI) for i in range(1000)), return_exceptions=True
    )
    assert outcomes == [str(i) for i in range(1000)]


async def test_batch_sizes_outside_the_limit_are_refused(echo_gateway: Gateway) -> None:
    for calls in ([], [echo("x")] * (MAX_BATCH + 1)):
        with pytest.raises(InvalidParams, match=f"1 to {MAX_BATCH} calls, got {len(calls)}"):
            await echo_gateway.batch(calls, CLI)
    assert echo_gateway.history.count() == 0


async def test_malformed_entries_name_their_place(echo_gateway: Gateway) -> None:
    calls: list[Any] = [
        echo("ok"),
        ["app", "tool"],
        {"app": "", "tool": "echo"},
        {"app": "dev.aai.echo"},
        {"app": "dev.aai.echo", "tool": "echo", "args": [1]},
        {"app": "dev.aai.echo", "tool": "echo", "args": {}, "timeout": 3},
    ]
    report = await echo_gateway.batch(calls, CLI)
    details = [r["error"]["detail"] if r["status"] == "error" else r["result"] for r in report["results"]]
    assert details[0] == "ok"
    assert "calls[1] must be an object" in details[1]
    assert "calls[2].app must be a non-empty string" in details[2]
    assert "calls[3].tool must be a non-empty string" in details[3]
    assert "calls[4].args must be an object" in details[4]
    assert "calls[5] has unknown keys timeout" in details[5]
    assert {r["error"]["code"] for r in report["results"][1:]} == {-32005}
    assert echo_gateway.history.count() == 1


async def test_one_question_per_app_and_tool_serves_every_call_of_it(echo_gateway: Gateway) -> None:
    questions: list[Question] = []
    release = asyncio.Event()

    async def ask(question: Question) -> Answer | None:
        questions.append(question)
        await release.wait()  # every call of the tool is waiting for this one answer by now
        return Answer.ONCE

    calls = [echo("a"), {"app": "dev.aai.echo", "tool": "add", "args": {"a": 1}}, echo("b"), echo("c")]
    batch = asyncio.ensure_future(echo_gateway.batch(calls, Caller(name="asker", ask=ask)))
    while len(questions) < 2:
        await asyncio.sleep(0)
    release.set()
    report = await batch
    assert [r.get("result") for r in report["results"]] == ["a", 2, "b", "c"]
    assert sorted(q.tool for q in questions) == ["add", "echo"]
    notes = {q.tool: dict(q.arguments).get("aai_batch") for q in questions}
    assert notes == {"echo": "this answer applies to all 3 calls of echo in the batch", "add": None}


async def test_an_unanswered_question_fails_only_its_calls(echo_gateway: Gateway) -> None:
    async def ask(question: Question) -> Answer | None:
        return None if question.tool == "echo" else Answer.ONCE

    report = await echo_gateway.batch(
        [echo("a"), {"app": "dev.aai.echo", "tool": "add", "args": {"a": 1}}], Caller(ask=ask)
    )
    assert [r["status"] for r in report["results"]] == ["error", "ok"]
    assert report["results"][0]["error"]["type"] == "CONSENT_REQUIRED"
    assert (report["ok"], report["error"], report["skipped"]) == (1, 1, 0)

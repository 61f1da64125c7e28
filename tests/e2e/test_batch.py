"""aai:batch through the installed gateway over stdio: order, per-call errors and consent, history, overlap.

Overlap is proven by the apps themselves: ten DBus apps served from this test's own event loop count
how many of their slow calls are in flight at once, so nothing here depends on how long a call took.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.session import ClientRequestContext

from tests.e2e.mcp_client import Consenter, error_of, stdio_session
from tests.napper import Napper, serving
from tests.napper import descriptor as napper_descriptor
from tests.support import TEST_APPS, Bus, gateway_command, install_descriptor

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SLOW_APPS = 10
ECHO = "dev.aai.echo"


def slow_descriptor(index: int) -> dict[str, Any]:
    return napper_descriptor(
        f"dev.aai.slow{index}", f"dev.aai.Slow{index}", "dev.aai.Slow", "/dev/aai/Slow", f"Slow {index}"
    )


@pytest.fixture
async def napper(bus: Bus) -> AsyncIterator[Napper]:
    """Ten bus names, dev.aai.Slow0..9, served by one object in this test's event loop."""
    async with serving(bus, "dev.aai.Slow", "/dev/aai/Slow", (f"dev.aai.Slow{i}" for i in range(SLOW_APPS))) as app:
        yield app


def make_home(tmp_path: Path, **config: Any) -> Path:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    for index in range(SLOW_APPS):
        folder = home / ".aai" / f"dev.aai.slow{index}"
        folder.mkdir(parents=True)
        (folder / "aai.json").write_text(json.dumps(slow_descriptor(index)), "utf-8")
    config.setdefault("consent", {"default": "allow"})
    (home / ".aai" / "config.json").write_text(json.dumps(config), "utf-8")
    return home


def env_for(bus: Bus, home: Path) -> dict[str, str]:
    return bus.env(HOME=str(home), AAI_PLATFORM="linux")


def echo(tool: str, **args: Any) -> dict[str, Any]:
    return {"app": ECHO, "tool": tool, "args": args}


def naps(count: int = SLOW_APPS, seconds: float = 0.2) -> list[dict[str, Any]]:
    return [{"app": f"dev.aai.slow{i % SLOW_APPS}", "tool": "nap", "args": {"seconds": seconds}} for i in range(count)]


async def batch(session: ClientSession, calls: list[Any], name: str = "aai_batch", **options: Any) -> dict[str, Any]:
    """The batch's report, checked to be the same in the text and the structured content."""
    result = await session.call_tool(name, {"calls": calls, **options})
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    report: dict[str, Any] = json.loads(block.text)
    assert result.structured_content == report
    assert len(report["results"]) == len(calls)
    return report


def outline(report: dict[str, Any]) -> list[tuple[str, Any]]:
    """(status, result or error type) of each call, in order."""
    return [
        (r["status"], r.get("result") if r["status"] == "ok" else r.get("error", {}).get("type"))
        for r in report["results"]
    ]


def history(env: dict[str, str]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [gateway_command(), "history", "--json"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    records: list[dict[str, Any]] = json.loads(done.stdout)
    return records


async def test_results_keep_their_order_and_each_call_fails_alone(
    bus: Bus, echo_app: None, napper: Napper, tmp_path: Path
) -> None:
    env = env_for(bus, make_home(tmp_path))
    calls = [
        echo("echo", text="first"),
        {"app": "no.such.app", "tool": "echo", "args": {}},
        echo("echo", text=5),
        echo("fail", message="broken on purpose"),
        {"app": ECHO, "args": {}},
        echo("add", a=2, b=3),
        "not a call",
        echo("echo", text="last"),
    ]
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        report = await batch(session, calls)
    assert outline(report) == [
        ("ok", "first"),
        ("error", "APP_NOT_FOUND"),
        ("error", "INVALID_PARAMS"),
        ("error", "AUTOMATION_FAILED"),
        ("error", "INVALID_PARAMS"),
        ("ok", 5),
        ("error", "INVALID_PARAMS"),
        ("ok", "last"),
    ]
    assert (report["ok"], report["error"], report["skipped"]) == (3, 5, 0)
    results = report["results"]
    assert results[0] == {
        "app": ECHO,
        "tool": "echo",
        "status": "ok",
        "durationMs": results[0]["durationMs"],
        "result": "first",
    }
    assert all(r["durationMs"] >= 0 for r in results)
    assert results[1]["error"]["code"] == -32002
    assert "text" in results[2]["error"]["detail"]
    assert results[3]["error"]["code"] == -32001
    assert "broken on purpose" in results[3]["error"]["detail"]
    assert "calls[4].tool" in results[4]["error"]["detail"]
    assert "calls[6]" in results[6]["error"]["detail"]
    assert "app" not in results[6]

    # one record per call that named an app and a tool; the malformed entries ran nothing
    records = history(env)
    assert sorted((r["tool"], r["status"]) for r in records) == sorted(
        [("echo", "ok"), ("echo", "error"), ("echo", "error"), ("fail", "error"), ("add", "ok"), ("echo", "ok")]
    )
    assert {r["caller"] for r in records} == {"mcp"}


async def test_ten_slow_calls_are_all_in_flight_at_once(bus: Bus, napper: Napper, tmp_path: Path) -> None:
    env = env_for(bus, make_home(tmp_path))
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        report = await batch(session, naps())
        assert outline(report) == [("ok", "rested")] * SLOW_APPS
        assert napper.peak == SLOW_APPS, "every nap overlapped every other"
        assert [r["app"] for r in report["results"]] == [f"dev.aai.slow{i}" for i in range(SLOW_APPS)]

        napper.peak = 0
        serial = await batch(session, naps(4), parallel=False)
        assert outline(serial) == [("ok", "rested")] * 4
        assert napper.peak == 1, "parallel: false runs one call after another"


async def test_max_concurrent_calls_bounds_a_batch_and_the_whole_gateway(
    bus: Bus, napper: Napper, tmp_path: Path
) -> None:
    env = env_for(bus, make_home(tmp_path, maxConcurrentCalls=3))
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        assert outline(await batch(session, naps(9))) == [("ok", "rested")] * 9
        assert napper.peak == 3

        # two batches and two single calls at once share the gateway's three slots
        napper.peak = 0
        async with anyio.create_task_group() as group:
            for _ in range(2):
                group.start_soon(batch, session, naps(5))
            for call in naps(2):
                group.start_soon(session.call_tool, "aai_exec", call)
        assert napper.naps == 9 + 12
        assert napper.peak == 3


async def test_stop_on_error_skips_what_has_not_started(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    env = env_for(bus, make_home(tmp_path, maxConcurrentCalls=2))
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        serial = [echo("echo", text="a"), echo("fail", message="m"), echo("echo", text="b"), echo("add", a=1)]
        report = await batch(session, serial, parallel=False, stopOnError=True)
        assert outline(report) == [("ok", "a"), ("error", "AUTOMATION_FAILED"), ("skipped", None), ("skipped", None)]
        assert report["results"][2] == {"app": ECHO, "tool": "echo", "status": "skipped"}
        assert (report["ok"], report["error"], report["skipped"]) == (1, 1, 2)

        # two slots: the running sleep finishes, the calls waiting for a slot are skipped
        calls = [echo("slow", seconds=1), echo("fail", message="m"), *[echo("echo", text="x")] * 3]
        report = await batch(session, calls, stopOnError=True)
        assert outline(report) == [("ok", "slept"), ("error", "AUTOMATION_FAILED")] + [("skipped", None)] * 3

        # without stopOnError nothing is skipped
        report = await batch(session, serial, parallel=False)
        assert outline(report) == [("ok", "a"), ("error", "AUTOMATION_FAILED"), ("ok", "b"), ("ok", 2)]
    assert len(history(env)) == 2 + 2 + 4


async def test_consent_is_asked_once_per_tool_and_applies_to_each_call(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    env = env_for(bus, make_home(tmp_path, consent={"default": "ask"}))
    asked: list[str] = []
    allow_once = Consenter("once")

    async def declines_add(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        asked.append(params.message)
        if "run add of" in params.message:
            return types.ElicitResult(action="decline")
        return await allow_once(context, params)

    calls = [echo("echo", text="1"), echo("add", a=1), echo("echo", text="2"), echo("add", a=2), echo("echo", text="3")]
    async with stdio_session(env, tmp_path / "stderr.log", consent=declines_add) as session:
        report = await batch(session, calls)
        assert outline(report) == [
            ("ok", "1"),
            ("error", "PERMISSION_DENIED"),
            ("ok", "2"),
            ("error", "PERMISSION_DENIED"),
            ("ok", "3"),
        ]
        assert report["results"][1]["error"]["code"] == -32004
        assert len(asked) == 2, asked
        echo_question = next(m for m in asked if "run echo of" in m)
        assert "this answer applies to all 3 calls of echo in the batch" in echo_question

        # "allow once" was not kept: the next batch asks again, once
        assert outline(await batch(session, calls[:1] * 2)) == [("ok", "1")] * 2
        assert len(asked) == 3
    assert sorted(r["status"] for r in history(env)) == ["error"] * 2 + ["ok"] * 5


async def test_a_client_that_cannot_be_asked_gets_consent_required_per_call(
    bus: Bus, echo_app: None, tmp_path: Path
) -> None:
    env = env_for(bus, make_home(tmp_path, consent={"default": "ask"}))
    async with stdio_session(env, tmp_path / "stderr.log", consent=None) as session:
        report = await batch(session, [echo("echo", text="1"), echo("add", a=1)])
    assert outline(report) == [("error", "CONSENT_REQUIRED"), ("error", "CONSENT_REQUIRED")]
    assert "aai-gateway consent allow" in report["results"][0]["error"]["detail"]


async def test_bad_batches_are_refused_whole_and_strict_names_work(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    env = env_for(bus, make_home(tmp_path, toolNames="strict"))
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        for arguments, words in (
            ({"calls": []}, "1 to 100"),
            ({"calls": [echo("echo", text="x")] * 101}, "1 to 100"),
            ({"calls": {"app": ECHO}}, "'calls' as an array"),
            ({}, "'calls' as an array"),
            ({"calls": [echo("echo", text="x")], "parallel": "yes"}, "'parallel' as true or false"),
            ({"calls": [echo("echo", text="x")], "stopOnError": 1}, "'stopOnError' as true or false"),
        ):
            error = await error_of(session, "aai_batch", arguments)
            assert error.code == -32005, arguments
            assert error.data is not None
            assert words in error.data["detail"], (arguments, error.data)
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert listed["aai_batch"].input_schema["properties"]["calls"]["maxItems"] == 100
        assert listed["aai_batch"].output_schema is not None
        report = await batch(session, [echo("echo", text="strict")], name="aai_batch")
        assert outline(report) == [("ok", "strict")]
    assert len(history(env)) == 1, "a refused batch runs nothing"

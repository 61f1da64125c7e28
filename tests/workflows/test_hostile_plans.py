"""Hostile plans through the installed command: each refused before anything runs, with a clear error naming
the step and field, and the gateway serving on. The echo app counts the calls it served."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.e2e.mcp_client import stdio_session, text_of
from tests.support import Bus, echo_home

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture
async def client(bus: Bus, echo_app: None, tmp_path: Path) -> AsyncIterator[ClientSession]:
    home = tmp_path / "home"
    echo_home(home, "mcp")
    env = {"HOME": str(home), "DBUS_SESSION_BUS_ADDRESS": bus.address, "AAI_PLATFORM": "linux"}
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        yield session


def echo(step_id: str, text: Any = "x", **more: Any) -> dict[str, Any]:
    return {"id": step_id, "app": "dev.aai.echo", "tool": "echo", "args": {"text": text}, **more}


async def served(client: ClientSession) -> int:
    result = await client.call_tool("aai_exec", {"app": "dev.aai.echo", "tool": "calls"})
    return int(text_of(result))


def deep(levels: int) -> Any:
    value: Any = "${steps.a.result}"
    for _ in range(levels):
        value = {"x": value}
    return value


HOSTILE: dict[str, tuple[dict[str, Any], str | None]] = {
    "python attributes": ({"steps": [echo("a"), echo("b", "v=${steps.a.__class__.__mro__}")]}, None),
    "a function of Python": (
        {"steps": [echo("a", "${__import__('os').getenv('HOME')}")]},
        "which JMESPath does not have",
    ),
    "a file": ({"steps": [echo("a", "${read_file('/etc/passwd')}")]}, "steps[id=a].args.text"),
    "the environment": ({"steps": [echo("a", "${env.HOME}")]}, "reads 'env', which is none of event, inputs, steps"),
    "itself": ({"steps": [echo("a", "${steps.a.result}")]}, "steps[id=a]: refers to its own result"),
    "a cycle": (
        {"steps": [echo("a", "${steps.b.result}"), echo("b", "${steps.a.result}")]},
        "cycle (a → b → a)",
    ),
    "a huge forEach": (
        {"steps": [echo("a", "${item}", forEach=list(range(5000)))]},
        "holds 5000 items, more than 1000",
    ),
    "deep nesting": (
        {"steps": [{"id": "a", "app": "dev.aai.echo", "tool": "describe", "args": deep(60)}]},
        "nested deeper than 32 levels",
    ),
    "10 MB of arguments": ({"steps": [echo("a", "y" * 10_000_000)]}, "more than 1,000,000"),
    "a missing step": ({"steps": [echo("a", "${steps.nobody.result}")]}, "no step has the id 'nobody'"),
    "too many steps": ({"steps": [echo(f"s{i}") for i in range(101)]}, "1 to 100 steps, got 101 steps"),
    "a bad query": ({"steps": [echo("a", "${steps.[}")]}, "is not a JMESPath query"),
    "an unknown key": ({"steps": [echo("a", run="rm -rf /")]}, "steps[id=a].run: is not a key of a step"),
}


@pytest.mark.hostile("validation")
@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_a_hostile_plan_runs_nothing(client: ClientSession, case: str) -> None:
    plan, said = HOSTILE[case]
    before = await served(client)
    result = await client.call_tool("aai_run", plan)
    after = await served(client)
    if said is None:  # JMESPath reads JSON only: a Python attribute is a missing field, null
        assert not result.is_error, result
        assert (result.structured_content or {})["steps"][1]["result"] == "v=null"
        assert after == before + 2
        return
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert said in text, text
    assert "nothing was called" in text, text
    assert after == before, "a step ran"


@pytest.mark.hostile("validation")
async def test_a_for_each_that_grows_too_large_at_run_time_calls_nothing_for_it(client: ClientSession) -> None:
    plan = {
        "inputs": {"many": list(range(1500))},
        "steps": [echo("a", "${item}", forEach="${inputs.many}")],
    }
    before = await served(client)
    result = await client.call_tool("aai_run", plan)
    assert result.is_error
    step = (result.structured_content or {})["steps"][0]
    assert step["status"] == "failed"
    assert "gave 1500 items, more than 1000" in step["error"]["detail"]
    assert await served(client) == before

"""`aai:run` in-process against the real DBus echo app: results passed along, order, failure handling and
every problem found before anything runs."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from aai_gateway.errors import InvalidParams
from aai_gateway.history.redact import MASK
from aai_gateway.service import Caller, Gateway

pytestmark = pytest.mark.anyio

CLI = Caller(name="plan-test", transport="cli")


def step(step_id: str, tool: str, **args: Any) -> dict[str, Any]:
    return {"id": step_id, "app": "dev.aai.echo", "tool": tool, "args": args}


async def run(gateway: Gateway, plan: dict[str, Any]) -> dict[str, Any]:
    _, report, _ = await gateway.run(plan, CLI)
    return report


async def test_a_result_passes_to_the_next_step_typed_or_as_text(echo_gateway: Gateway) -> None:
    report = await run(
        echo_gateway,
        {
            "steps": [
                step("sum", "add", a=2, b=3),
                step("twice", "add", a="${steps.sum.result}", b="${steps.sum.result}"),
                step("say", "echo", text="sum ${steps.sum.result}, twice ${steps.twice.result}"),
            ],
            "output": {"said": "${steps.say.result}", "n": "${steps.twice.result}"},
        },
    )
    assert report["status"] == "ok"
    assert report["output"] == {"said": "sum 5, twice 10", "n": 10}
    assert [s["status"] for s in report["steps"]] == ["ok", "ok", "ok"]


async def test_if_and_for_each(echo_gateway: Gateway) -> None:
    report = await run(
        echo_gateway,
        {
            "inputs": {"words": ["a", "b", "c"], "loud": False},
            "steps": [
                {**step("each", "echo", text="${item}!"), "forEach": "${inputs.words}"},
                {**step("shout", "echo", text="LOUD"), "if": "${inputs.loud}"},
                step("joined", "join", parts="${steps.each.result}", sep="-"),
            ],
            "output": "${steps.joined.result}",
        },
    )
    assert report["output"] == "a!-b!-c!"
    assert report["steps"][1]["status"] == "skipped"


async def test_a_failure_skips_what_depends_on_it_and_rolls_back_what_was_done(echo_gateway: Gateway) -> None:
    report = await run(
        echo_gateway,
        {
            "steps": [
                {**step("first", "add", a=1), "undo": {"tool": "echo", "args": {"text": "undo ${result}"}}},
                {**step("boom", "fail", message="no"), "args": {"message": "after ${steps.first.result}"}},
                step("after", "echo", text="${steps.boom.result}"),
            ]
        },
    )
    assert report["status"] == "rolledBack"
    statuses = {s["id"]: s["status"] for s in report["steps"]}
    assert statuses == {"first": "undone", "boom": "failed", "after": "skipped"}
    assert report["steps"][0]["undo"] == {"status": "ok", "tool": "echo"}


@pytest.mark.hostile("validation")
async def test_every_problem_is_found_before_anything_runs(echo_gateway: Gateway) -> None:
    before = echo_gateway.history.count()
    plan = {
        "steps": [
            step("a", "add", a="${steps.b.result}"),
            step("b", "add", a="${steps.a.result}"),
            step("c", "nope"),
            step("d", "add", a="not a number"),
            step("e", "echo", text="${steps.ghost.result}"),
            step("f", "echo", text="${__import__('os')}"),
            {**step("g", "echo", text="x"), "retries": 2},
        ]
    }
    with pytest.raises(InvalidParams) as refused:
        await run(echo_gateway, plan)
    detail = refused.value.detail
    assert "nothing was called" in detail
    for said in ("steps[id=e]: refers to steps.ghost", "steps[id=f].args.text", "which JMESPath does not have"):
        assert said in detail
    assert echo_gateway.history.count() == before
    cyclic = {"steps": [step("a", "add", a="${steps.b.result}"), step("b", "add", a="${steps.a.result}")]}
    with pytest.raises(InvalidParams, match=r"cycle \(a → b → a\)"):
        await run(echo_gateway, cyclic)
    checked = {"steps": [step("c", "nope"), step("d", "add", a="x"), {**step("g", "exit"), "retries": 2}]}
    with pytest.raises(InvalidParams) as refused:
        await run(echo_gateway, checked)
    detail = refused.value.detail
    assert "steps[id=c]: dev.aai.echo has no tool 'nope'" in detail
    assert "steps[id=d].args" in detail
    assert "steps[id=g].retries" in detail
    assert echo_gateway.history.count() == before


async def test_stop_skips_what_has_not_started_and_continue_runs_what_does_not_depend(echo_gateway: Gateway) -> None:
    steps = [
        step("boom", "fail", message="no"),
        {**step("later", "echo", text="${steps.boom.result}")},
        {**step("alone", "add", a=1), "if": "${`true`}"},
    ]
    stopped = await run(echo_gateway, {"steps": steps, "onError": "stop"})
    assert stopped["status"] == "failed"
    assert {s["id"]: s["status"] for s in stopped["steps"]}["later"] == "skipped"
    went_on = await run(echo_gateway, {"steps": steps, "onError": "continue"})
    statuses = {s["id"]: s["status"] for s in went_on["steps"]}
    assert statuses == {"boom": "failed", "later": "skipped", "alone": "ok"}
    assert "needs step boom, which failed" in went_on["steps"][1]["reason"]


async def test_a_step_past_its_timeout_fails_and_is_retried_only_when_it_may_run_twice(echo_gateway: Gateway) -> None:
    before = echo_gateway.history.count()
    report = await run(echo_gateway, {"steps": [{**step("slow", "sleep", seconds=0.5), "timeout": 0.1, "retries": 2}]})
    failed = report["steps"][0]
    assert failed["status"] == "failed"
    assert "longer than its timeout of 0.1 s" in failed["error"]["detail"]
    runs = [r for r in echo_gateway.history.query() if r.tool == "sleep"]
    assert len(runs) == 3  # the first try and two retries of a read-only tool
    assert echo_gateway.history.count() > before


async def test_a_plan_past_its_own_timeout_undoes_what_was_done(echo_gateway: Gateway) -> None:
    report = await run(
        echo_gateway,
        {
            "timeout": 0.3,
            "steps": [
                {**step("done", "add", a=1), "undo": {"tool": "echo", "args": {"text": "undo"}}},
                step("slow", "sleep", seconds="${`0.9` || steps.done.result}"),
            ],
        },
    )
    assert report["status"] == "rolledBack"
    statuses = {s["id"]: s["status"] for s in report["steps"]}
    assert statuses == {"done": "undone", "slow": "failed"}
    slow = next(s for s in report["steps"] if s["id"] == "slow")
    assert "the plan's timeout of 0.3 s ran out during this step" in slow["error"]["detail"]


async def test_each_item_of_a_for_each_is_undone(echo_gateway: Gateway) -> None:
    report = await run(
        echo_gateway,
        {
            "steps": [
                {
                    **step("each", "add", a="${item}"),
                    "forEach": [1, 2, 3],
                    "undo": {"tool": "echo", "args": {"text": "undo ${item}: ${result}"}},
                },
                {**step("boom", "fail", message="${join(',', steps.each.result[].to_string(@))}")},
            ]
        },
    )
    assert report["steps"][0]["status"] == "undone"
    undone = sorted(r.args["text"] for r in echo_gateway.history.query() if r.tool == "echo")
    assert undone == ["undo 1: 2", "undo 2: 3", "undo 3: 4"]


async def test_a_plan_is_saved_only_with_the_users_yes(echo_gateway: Gateway) -> None:
    from aai_gateway.consent import Answer, Question  # noqa: PLC0415

    asked: list[Question] = []

    def answering(answer: Answer) -> Any:
        async def ask(question: Question) -> Answer:
            asked.append(question)
            return answer

        return ask

    plan = {"steps": [step("sum", "add", a="${inputs.a}", b=2)], "inputs": {"a": 1}, "output": "${steps.sum.result}"}
    no = Caller(name="plan-test", transport="stdio", ask=answering(Answer.DENY))
    text, report, _ = await echo_gateway.run({**plan, "saveAs": "adder"}, replace(CLI, ask=no.ask))
    assert report["saved"]["status"] == "notSaved"
    assert "Not saved: the user said no" in text
    assert echo_gateway.shelf.get("adder") is None
    yes = answering(Answer.ONCE)
    text, report, _ = await echo_gateway.run(
        {**plan, "saveAs": {"id": "adder", "name": "Add two|Zwei addieren"}}, replace(CLI, ask=yes)
    )
    assert report["saved"]["status"] == "saved", report
    assert "(save the plan)" in [q.tool for q in asked]
    saved = echo_gateway.shelf.get("adder")
    assert saved is not None
    assert saved.name == "Add two"
    again = await echo_gateway.call("aai.workflows", "adder", {"a": 40}, CLI)
    assert again["output"] == 42
    with pytest.raises(InvalidParams, match="exists already"):
        await echo_gateway.run({**plan, "saveAs": "adder"}, CLI)


async def test_a_tool_checked_again_keeps_apart_the_arguments_each_step_builds(echo_gateway: Gateway) -> None:
    """A tool's argument check is built once per required arguments its step leaves to `${…}`: a step that
    builds `a` is not told it lacks it, one that neither writes nor builds it is, on every run."""
    plan = {
        "steps": [
            step("first", "add", a=1),
            step("built", "add", a="${steps.first.result}"),
            step("lacking", "add", b=2),
        ]
    }
    for _ in range(2):
        with pytest.raises(InvalidParams) as refused:
            await run(echo_gateway, plan)
        detail = refused.value.detail
        assert "1 problem(s)" in detail
        assert "steps[id=lacking].args" in detail
    fine = await run(echo_gateway, {"steps": plan["steps"][:2], "output": "${steps.built.result}"})
    assert fine["output"] == 3
    with pytest.raises(InvalidParams, match=r"steps\[id=wrong\]\.args"):
        await run(echo_gateway, {"steps": [*plan["steps"][:2], step("wrong", "add", a="${steps.first.result}", b="x")]})


async def test_a_workflows_sensitive_input_is_hidden_in_its_run_and_its_steps(echo_gateway: Gateway) -> None:
    secret = "SECRET-4711"
    folder = echo_gateway.settings.aai_home / "workflows"
    folder.mkdir(exist_ok=True)
    pin = {"type": "string", "x-sensitive": True}
    workflow = {
        "name": "Unlock",
        "inputs": {"type": "object", "properties": {"pin": pin, "room": {"type": "string"}}, "required": ["pin"]},
        "steps": [step("say", "echo", text="${inputs.pin}"), step("where", "echo", text="${inputs.room}")],
    }
    (folder / "unlock.json").write_text(json.dumps(workflow))
    echo_gateway.rescan()
    answer = await echo_gateway.call("aai.workflows", "unlock", {"pin": secret, "room": "hall"}, CLI)
    assert answer["steps"][0]["result"] == secret, "the caller gets what the steps gave"
    echo_gateway.calls.history.flush()
    records = {r.step or r.app: r for r in echo_gateway.calls.history.query()}
    run_record = records["aai.workflows"]
    assert run_record.args == {"steps": 2, "inputs": {"pin": MASK, "room": "hall"}}
    assert run_record.result is not None
    assert json.loads(run_record.result)["status"] == "ok", "the run keeps its report as JSON"
    for kept in records.values():
        assert secret not in json.dumps([kept.args, kept.result, kept.error_detail]), kept
    assert records["say"].args == {"text": MASK}
    assert records["where"].args == {"text": "hall"}, "what the inputs' schema does not mark stays"


async def test_a_plans_record_keeps_its_report_as_json(echo_gateway: Gateway) -> None:
    await run(echo_gateway, {"steps": [step("say", "echo", text="hi")], "output": "${steps.say.result}"})
    echo_gateway.calls.history.flush()
    (run_record,) = echo_gateway.calls.history.query(app="aai.workflows")
    assert run_record.result is not None
    kept = json.loads(run_record.result)
    assert (kept["status"], kept["output"], kept["steps"][0]["result"]) == ("ok", "hi", "hi")

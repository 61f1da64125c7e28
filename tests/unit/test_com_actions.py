"""The COM executor's action lists against the pywin32 stand-in (tests/standins/pywin32): what each
action asks of the objects, variables, last_result, output parsers, and checks that name the action."""

from __future__ import annotations

import json
import platform
import sys
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.validate import check_document
from aai_gateway.errors import (
    AaiError,
    AaiJsonInvalid,
    AppNotFound,
    AutomationFailed,
    AutomationNotSupported,
    InvalidParams,
)
from aai_gateway.executors import com
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.com import ComExecutor, parse_output
from aai_gateway.executors.com_actions import plain, plan

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parents[2]
STANDIN = ROOT / "tests" / "standins" / "pywin32"
SEED = ROOT / "tests" / "golden" / "seeds" / "seed003-mail-multi.json"

PARAMETERS = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "count": {"type": "integer"},
        "flag": {"type": "boolean", "default": True},
        "note": {"type": "string"},
    },
}


def load_standin(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Put the pywin32 stand-in first on sys.path; returns its object model (`comapps`), emptied."""
    monkeypatch.syspath_prepend(str(STANDIN))
    world = import_module("comapps")
    world.reset()
    return world


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Any:
    return load_standin(monkeypatch)


def app(script: list[Any], app_id: str = "com.example.office", **extra: Any) -> Descriptor:
    """A shape A descriptor whose windows platform has one tool `t` running `script`."""
    tool = {"name": "t", "description": "T", "parameters": PARAMETERS, "script": script}
    tool.update({k: v for k, v in extra.items() if k != "progid"})
    windows: dict[str, Any] = {"automation": "com", "tools": [tool]}
    if "progid" in extra:
        windows["progid"] = extra["progid"]
    doc = {"schema_version": "1.0", "appId": app_id, "name": "Office", "platforms": {"windows": windows}}
    loaded = check_document(doc, "test")
    assert loaded.descriptor, loaded.problems
    return loaded.descriptor


def call_of(descriptor: Descriptor, args: dict[str, Any] | None = None, timeout: float = 30.0) -> ToolCall:
    binding = next(iter(descriptor.bindings.values()))
    return ToolCall(app=descriptor, binding=binding, tool=binding.tools[0], args=args or {}, timeout=timeout)


async def run(script: list[Any], args: dict[str, Any] | None = None, **extra: Any) -> Any:
    return await ComExecutor().execute(call_of(app(script, **extra), args))


VALUES = {"action": "create", "var": "v", "progid": "Test.Values"}


async def test_the_seed_outlook_example_sends_one_mail_and_returns_its_json(world: Any) -> None:
    seed = check_document(json.loads(SEED.read_text()), str(SEED)).descriptor
    assert seed is not None
    binding = seed.bindings["windows"]
    args = {"to": "ada@example.com", "subject": "Hello", "body": "Line one\nLine two"}
    call = ToolCall(app=seed, binding=binding, tool=binding.tools[0], args=args, timeout=30)
    assert await ComExecutor().execute(call) == {"success": True, "message_id": "generated"}
    assert world.LOG == [
        {"op": "create", "progid": "Outlook.Application"},
        {"op": "call", "object": "Outlook.Application", "method": "CreateItem", "args": [0]},
        {"op": "set", "object": "Outlook.MailItem", "property": "To", "value": "ada@example.com"},
        {"op": "set", "object": "Outlook.MailItem", "property": "Subject", "value": "Hello"},
        {"op": "set", "object": "Outlook.MailItem", "property": "Body", "value": "Line one\nLine two"},
        {"op": "call", "object": "Outlook.MailItem", "method": "Send", "args": []},
    ]


async def test_create_takes_the_platforms_progid_when_the_action_names_none(world: Any) -> None:
    script = [{"action": "create", "var": "fs"}, {"action": "call", "object": "fs", "method": "GetTempName"}]
    assert await run(script, progid="Scripting.FileSystemObject") == "rad00001.tmp"
    assert world.LOG[0] == {"op": "create", "progid": "Scripting.FileSystemObject"}


async def test_call_arguments_keep_their_json_types_and_text_is_filled_in(world: Any) -> None:
    script = [
        VALUES,
        {
            "action": "call",
            "object": "v",
            "method": "Echo",
            "args": ["${count}", "${flag}", "n=${count}", 7, None, [1, "${text}"], {"k": "${text}"}],
        },
    ]
    result = await run(script, {"count": 3, "text": "x"})
    assert result == [3, True, "n=3", 7, None, [1, "x"], {"k": "x"}]
    assert world.LOG[1]["args"] == [3, True, "n=3", 7, None, [1, "x"], {"k": "x"}]


async def test_a_call_with_a_var_keeps_what_it_returned_for_later_actions(world: Any) -> None:
    script = [
        {"action": "create", "var": "fs", "progid": "Scripting.FileSystemObject"},
        {"action": "call", "var": "name", "object": "fs", "method": "GetTempName"},
        {"action": "call", "object": "fs", "method": "BuildPath", "args": ["C:\\Temp", "${text}"]},
        {"action": "return", "var": "name"},
    ]
    assert await run(script, {"text": "a.txt"}) == "rad00001.tmp"
    assert world.LOG[-1] == {"op": "call", "object": "Scripting.FileSystemObject", "method": "BuildPath",
                             "args": ["C:\\Temp", "a.txt"]}  # fmt: skip


async def test_set_and_get_a_property(world: Any) -> None:
    script = [
        VALUES,
        {"action": "set", "object": "v", "property": "Value", "value": "${text}"},
        {"action": "get", "object": "v", "property": "Value", "var": "read"},
    ]
    assert await run(script, {"text": "ünïcode"}) == "ünïcode"
    assert world.LOG[1:] == [
        {"op": "set", "object": "Test.Values", "property": "Value", "value": "ünïcode"},
        {"op": "get", "object": "Test.Values", "property": "Value"},
    ]


async def test_objects_returned_by_calls_are_used_as_objects(world: Any) -> None:
    script = [
        VALUES,
        {"action": "call", "var": "child", "object": "v", "method": "Child"},
        {"action": "set", "object": "child", "property": "Value", "value": "deep"},
        {"action": "get", "object": "child", "property": "Value", "var": "out"},
    ]
    assert await run(script) == "deep"


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ([{"action": "call", "object": "v", "method": "Json"}], {"a": [1, 2]}),
        (
            [
                {"action": "call", "object": "v", "method": "Json"},
                {"action": "set", "object": "v", "property": "Value", "value": "x"},
            ],
            {"a": [1, 2]},
        ),
        ([{"action": "call", "object": "v", "method": "Nothing"}], None),
        ([{"action": "call", "object": "v", "method": "Count"}], 3),
        ([{"action": "call", "object": "v", "method": "Now"}], "2024-05-06T07:08:09+00:00"),
        ([{"action": "call", "object": "v", "method": "Array"}], [1, "two", [3.5, None]]),
        ([{"action": "call", "object": "v", "method": "Money"}], 12.34),
        ([{"action": "call", "object": "v", "method": "Bytes"}], "AAH/"),
        ([{"action": "call", "object": "v", "method": "Child"}], "<COMObject Test.Values>"),
        ([], "<COMObject Test.Values>"),
        ([{"action": "return", "var": "v"}], "<COMObject Test.Values>"),
        ([{"action": "return", "value": "${text}"}], "plain"),
        ([{"action": "return", "value": "${count}"}], 2),
        ([{"action": "return", "value": '[${count}, "${text}"]'}], [2, "plain"]),
        ([{"action": "return", "value": "{not json"}], "{not json"),
        ([{"action": "return", "value": {"n": "${count}"}}], {"n": 2}),
    ],
    ids=lambda v: json.dumps(v)[:60] if isinstance(v, list) else None,
)
async def test_last_result_is_the_last_value_an_action_produced(world: Any, tail: list[Any], expected: Any) -> None:
    assert await run([VALUES, *tail], {"text": "plain", "count": 2}) == expected


async def test_an_argument_that_is_absent_takes_its_default_or_is_reported(world: Any) -> None:
    script = [VALUES, {"action": "call", "object": "v", "method": "Echo", "args": ["${flag}"]}]
    assert await run(script) == [True]
    script = [VALUES, {"action": "set", "object": "v", "property": "Value", "value": "${note}"}]
    with pytest.raises(InvalidParams, match=r"script\[1\] \(set\): argument 'note' was not given and has no default"):
        await run(script)


@pytest.mark.parametrize(
    ("parser", "value", "expected"),
    [
        ("last_result", '{"a": 1}', {"a": 1}),
        ("last_result", " [1, 2]", [1, 2]),
        ("last_result", "3", "3"),
        ("last_result", "[not json", "[not json"),
        ("last_result", 3, 3),
        ("json", "3", 3),
        ("json", '"text"', "text"),
        ("json", [1], [1]),
        ("string", "text", "text"),
        ("string", None, ""),
        ("string", 3, "3"),
        ("string", {"a": "é"}, '{"a": "é"}'),
    ],
)
def test_output_parsers(parser: str, value: Any, expected: Any) -> None:
    assert parse_output(value, parser, "x's t") == expected


def test_the_json_parser_refuses_text_that_is_not_json() -> None:
    with pytest.raises(AutomationFailed, match=r"x's t returned text that is not JSON \(output_parser is json\)"):
        parse_output("sent!", "json", "x's t")


async def test_the_output_parser_is_applied_to_the_result(world: Any) -> None:
    script = [VALUES, {"action": "return", "value": "${count}"}]
    assert await run(script, {"count": 5}, output_parser="string") == "5"
    script = [VALUES, {"action": "call", "object": "v", "method": "Json"}]
    assert await run(script, output_parser="json") == {"a": [1, 2]}


def test_plain_turns_com_values_into_json() -> None:
    assert plain((1, (2.5, float("inf")), {"k": b"\x00"})) == [1, [2.5, "inf"], {"k": "AA=="}]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ({"action": "create"}, "script must be a non-empty list of actions"),
        ([], "script must be a non-empty list of actions"),
        (["create"], r"script\[0\] must be an object with an `action`"),
        ([{"action": "delete"}], r"script\[0\]: action must be one of create, call, set, get, return; got 'delete'"),
        ([VALUES, {"action": "set", "object": "v", "property": "Value", "vlaue": "x"}],
         r"script\[1\] \(set\): unknown field 'vlaue'; set takes object, property, value"),
        ([VALUES, {"action": "set", "object": "v", "value": "x"}], r"script\[1\] \(set\): needs `property`"),
        ([VALUES, {"action": "get", "object": "v", "property": "Value"}], r"script\[1\] \(get\): needs `var`"),
        ([{"action": "create", "var": "app", "progid": "Outlook.Application"},
          {"action": "call", "var": "mail", "object": "app", "method": "CreateItem", "args": [0]},
          {"action": "set", "object": "mial", "property": "To", "value": "x"}],
         r"script\[2\] \(set\): no variable 'mial'; known: app, mail"),
        ([{"action": "call", "object": "app", "method": "Quit"}],
         r"script\[0\] \(call\): no variable 'app'; known: none"),
        ([VALUES, {"action": "return", "var": "w"}], r"script\[1\] \(return\): no variable 'w'; known: v"),
        ([VALUES, {"action": "call", "object": "v", "method": "__class__"}],
         r"script\[1\] \(call\): `method` must be a COM member name; got '__class__'"),
        ([VALUES, {"action": "get", "object": "v", "property": "${text}", "var": "x"}],
         r"script\[1\] \(get\): `property` must be a COM member name"),
        ([{"action": "create", "var": "my app"}], r"script\[0\] \(create\): `var` must be a variable name"),
        ([{"action": "create", "var": "a"}], r"script\[0\] \(create\): needs a `progid` \(or one on the windows"),
        ([{"action": "create", "var": "a", "progid": "${progid}"}],
         r"script\[0\] \(create\): the ProgID is fixed by the descriptor; it cannot come from an argument"),
        ([VALUES, {"action": "call", "object": "v", "method": "Echo", "args": "${text}"}],
         r"script\[1\] \(call\): `args` must be a list"),
        ([{"action": "return"}], r"script\[0\] \(return\): give either `value` \(a template\) or `var`"),
        ([VALUES, {"action": "return", "var": "v", "value": 1}], r"script\[1\] \(return\): give either"),
        ([{"action": "return", "value": 1}, VALUES], r"script\[1\] follows a return at script\[0\] and would never"),
    ],
)  # fmt: skip
def test_a_broken_action_list_is_refused_naming_the_action(script: Any, message: str) -> None:
    with pytest.raises(AaiJsonInvalid, match=message):
        plan(script, None)


def test_comments_and_descriptions_may_annotate_actions() -> None:
    [action] = plan([{"action": "create", "var": "a", "progid": "X.Y", "comment": "why"}], None)
    assert (action.kind, action.var, action.progid) == ("create", "a", "X.Y")


async def test_the_executor_names_the_app_and_tool_of_a_broken_list(world: Any) -> None:
    script = [VALUES, {"action": "set", "object": "w", "property": "Value", "value": "x"}]
    with pytest.raises(AaiJsonInvalid) as caught:
        await run(script)
    assert caught.value.detail == "com.example.office's t: script[1] (set): no variable 'w'; known: v"
    assert world.LOG == []


async def test_a_tools_action_list_is_checked_once_until_the_descriptor_changes(
    world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[Any] = []

    def counting(script: Any, progid: str | None) -> Any:
        checked.append(script)
        return plan(script, progid)

    monkeypatch.setattr(com, "plan", counting)
    executor = ComExecutor()
    first = app([VALUES, {"action": "return", "value": 1}])
    await executor.execute(call_of(first))
    await executor.execute(call_of(first))
    assert len(checked) == 1
    changed = app([VALUES, {"action": "return", "value": 2}])
    assert await executor.execute(call_of(changed)) == 2
    assert len(checked) == 2


async def test_com_is_initialised_in_the_worker_thread_and_released_after(world: Any) -> None:
    pythoncom = import_module("pythoncom")
    opened = pythoncom.APARTMENTS["opened"]
    await run([VALUES, {"action": "call", "object": "v", "method": "Count"}])
    await run([VALUES])
    assert (pythoncom.APARTMENTS["open"], pythoncom.APARTMENTS["opened"]) == (0, opened + 2)
    assert not pythoncom.initialised()


async def test_without_pywin32_com_is_not_supported_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pythoncom", None)
    with pytest.raises(AutomationNotSupported) as caught:
        await run([VALUES])
    assert "COM automation needs Windows with pywin32 installed (pip install pywin32)" in caught.value.detail
    assert f"this gateway runs on {platform.system()}" in caught.value.detail


def camel(app_id: str = "com.example.envelope", tool: str = "add", **execution: Any) -> Descriptor:
    doc = {
        "schemaVersion": "1.0",
        "version": "1.0.0",
        "platform": "windows",
        "app": {"id": app_id, "name": {"en": "Envelope"}, "defaultLang": "en"},
        "execution": {"type": "com", **execution},
        "tools": [{"name": tool, "description": "Add", "parameters": PARAMETERS}],
    }
    loaded = check_document(doc, "test")
    assert loaded.descriptor, loaded.problems
    return loaded.descriptor


async def test_the_envelope_goes_to_execute_of_the_progid(world: Any) -> None:
    descriptor = camel(progid="Test.Envelope")
    assert descriptor.bindings["windows"].automation == "com-ipc"
    args = {"text": 'x" & y', "count": 2}
    assert await ComExecutor().execute(call_of(descriptor, args)) == {"tool": "add", "params": args}
    [create, execute] = world.LOG
    assert create == {"op": "create", "progid": "Test.Envelope"}
    assert execute["method"] == "Execute"
    request = json.loads(execute["args"][0])
    assert request.pop("request_id")
    assert request == {"version": "1.0", "tool": "add", "params": args}


async def test_the_envelope_progid_defaults_to_the_app_id(world: Any) -> None:
    assert await ComExecutor().execute(call_of(camel("test.envelope"), {"count": 1})) == {
        "tool": "add",
        "params": {"count": 1},
    }


async def test_envelope_failures(world: Any) -> None:
    executor = ComExecutor()
    with pytest.raises(AaiError) as refused:
        await executor.execute(call_of(camel(tool="refuse", progid="Test.Envelope")))
    assert (refused.value.type, refused.value.detail) == ("PERMISSION_DENIED", "not today")
    with pytest.raises(AutomationFailed, match=r"Test.Envelope.Execute did not answer with a JSON envelope"):
        await executor.execute(call_of(camel(tool="garbage", progid="Test.Envelope")))
    with pytest.raises(AppNotFound, match=r"Windows knows no ProgID 'No.Such'"):
        await executor.execute(call_of(camel(progid="No.Such")))
    with pytest.raises(AutomationFailed, match=r"Test.Values.Execute: Test.Values has no member 'Execute'"):
        await executor.execute(call_of(camel(progid="Test.Values")))

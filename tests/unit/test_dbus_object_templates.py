"""A DBus tool's object path may take arguments (`/org/bluez/${adapter}`, `${item}`), and an argument template's
schema follows lists and objects, so a parameter's `signature` reaches a variant inside a dict."""

from __future__ import annotations

from typing import Any

import pytest

from aai_gateway.descriptor.model import Binding, Descriptor, Tool
from aai_gateway.errors import InvalidParams
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.dbus import DbusExecutor, target_of, template_schema


def call(obj: str | None, **args: Any) -> ToolCall:
    options = {"method": "Get"} | ({"object": obj} if obj is not None else {})
    props = {name: {"type": "string"} for name in args}
    tool = Tool(name="get", description="", parameters={"type": "object", "properties": props}, options=options)
    binding = Binding(
        platform="linux", automation="dbus", tools=(tool,), options={"service": "org.example.App", "object": "/x"}
    )
    app = Descriptor(app_id="org.example.app", names=(), description="", bindings={"linux": binding}, shape="camel")
    return ToolCall(app=app, binding=binding, tool=tool, args=args, timeout=5)


@pytest.mark.parametrize(
    ("template", "args", "path"),
    [
        (None, {}, "/x"),
        ("/org/example/Fixed", {}, "/org/example/Fixed"),
        (
            "${item}",
            {"item": "/org/freedesktop/secrets/collection/login/3"},
            "/org/freedesktop/secrets/collection/login/3",
        ),
        ("/org/bluez/${adapter}/dev_${device}", {"adapter": "hci0", "device": "AA_BB"}, "/org/bluez/hci0/dev_AA_BB"),
    ],
)
def test_the_object_path_takes_the_arguments(template: str | None, args: dict[str, str], path: str) -> None:
    assert target_of(call(template, **args)).path == path


@pytest.mark.parametrize(
    ("template", "args"),
    [
        ("${item}", {"item": "not/a/path"}),
        ("${item}", {"item": "/trailing/"}),
        ("/org/bluez/${adapter}", {"adapter": "hci 0"}),
        ("/org/bluez/${adapter}", {"adapter": "../x"}),
    ],
)
def test_arguments_that_make_no_object_path_are_refused(template: str, args: dict[str, str]) -> None:
    with pytest.raises(InvalidParams, match="which is not one"):
        target_of(call(template, **args))


def test_a_missing_argument_of_the_path_is_named() -> None:
    with pytest.raises(InvalidParams, match="argument 'item'"):
        target_of(call("${item}"))


def test_the_schema_of_a_template_follows_lists_and_objects() -> None:
    attributes = {"type": "object", "signature": "a{ss}"}
    props = {"label": {"type": "string"}, "attributes": attributes, "secret": {"type": "string"}}
    template = [{"Label": "${label}", "Attributes": "${attributes}"}, ["${session}", "", "${secret}"], True]
    assert [template_schema(t, props) for t in template] == [
        {"type": "object", "properties": {"Label": {"type": "string"}, "Attributes": attributes}},
        {"type": "array", "items": [{}, {"type": "string"}, {"type": "string"}]},
        {"type": "boolean"},
    ]
    assert template_schema("Dear ${label}", props) == {"type": "string"}


def method_call(templates: list[Any] | None, props: dict[str, Any], **args: Any) -> ToolCall:
    options: dict[str, Any] = {"method": "Send"} | ({"args": templates} if templates is not None else {})
    tool = Tool(name="send", description="", parameters={"type": "object", "properties": props}, options=options)
    binding = Binding(
        platform="linux", automation="dbus", tools=(tool,), options={"service": "org.example.App", "object": "/x"}
    )
    app = Descriptor(app_id="org.example.app", names=(), description="", bindings={"linux": binding}, shape="camel")
    return ToolCall(app=app, binding=binding, tool=tool, args=args, timeout=5)


def test_a_methods_arguments_come_from_the_call_its_defaults_and_its_templates() -> None:
    props = {"text": {"type": "string"}, "count": {"type": "integer", "default": 3}, "flag": {"type": "boolean"}}
    executor = DbusExecutor()
    given = method_call(None, props, text="hi", flag=True)
    assert executor._body(given, "sib") == ["hi", 3, True], "a parameter left out takes its default"
    assert executor._body(method_call(None, props, text="hi", count=7, flag=False), "sib") == ["hi", 7, False]
    templated = method_call(["Dear ${text} x${count}", "${count}", 5], props, text="Ann")
    assert executor._body(templated, "sii") == ["Dear Ann x3", 3, 5]
    with pytest.raises(InvalidParams, match="argument 'flag' is needed by the DBus call and has no default"):
        executor._body(method_call(None, props, text="hi"), "sib")
    with pytest.raises(InvalidParams, match="argument 'count'"):
        executor._body(method_call(None, props, text="hi", count="many", flag=True), "sib")

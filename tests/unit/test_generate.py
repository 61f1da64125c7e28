"""`--generate`'s mapping from DBus introspection to an aai.json, table-tested on introspection XML."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

import pytest
from dbus_fast.introspection import Node

from aai_gateway.authoring.dbus_services import described_by
from aai_gateway.authoring.generate import Operation, annotations_for, generate, schema_for
from aai_gateway.config import load_settings
from aai_gateway.descriptor.validate import check_document
from aai_gateway.discovery import scan
from tests.support import TEST_APPS, install_descriptor

HEAD = '<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" ' + (
    '"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">\n'
)

STANDARD = """
  <interface name="org.freedesktop.DBus.Properties">
    <method name="Get">
      <arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/>
    </method>
  </interface>
  <interface name="org.freedesktop.DBus.Introspectable">
    <method name="Introspect"><arg type="s" direction="out"/></method>
  </interface>
  <interface name="org.freedesktop.DBus.Peer"><method name="Ping"/></interface>
  <interface name="org.freedesktop.DBus.ObjectManager">
    <method name="GetManagedObjects"><arg type="a{oa{sa{sv}}}" direction="out"/></method>
  </interface>
"""

ECHO = (
    HEAD
    + "<node>"
    + STANDARD
    + """
  <interface name="dev.aai.Echo">
    <method name="Add">
      <arg name="a" direction="in" type="i"/><arg name="b" direction="in" type="i"/><arg direction="out" type="i"/>
    </method>
    <method name="Echo"><arg name="text" direction="in" type="s"/><arg direction="out" type="s"/></method>
    <method name="Calls"><arg direction="out" type="u"/></method>
    <property name="Label" type="s" access="read"/>
    <property name="Volume" type="d" access="readwrite"/>
  </interface>
  <interface name="com.aai.Executor">
    <method name="Execute"><arg name="request" direction="in" type="s"/><arg direction="out" type="s"/></method>
  </interface>
</node>"""
)


def objects(**xml_by_path: str) -> dict[str, Node]:
    """`root=...` is "/", `dev_aai_Echo=...` is "/dev/aai/Echo"."""
    return {("/" if k == "root" else "/" + k.replace("_", "/")): Node.parse(v) for k, v in xml_by_path.items()}


def node(*interfaces: str) -> str:
    return HEAD + "<node>" + "".join(interfaces) + "</node>"


def tools_of(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = doc["platforms"]["linux"]["tools"] if "platforms" in doc else doc["tools"]
    return tools


def by_name(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in tools_of(doc)}


@pytest.mark.parametrize(
    ("signature", "schema"),
    [
        ("s", {"type": "string"}),
        ("g", {"type": "string"}),
        ("b", {"type": "boolean"}),
        ("y", {"type": "integer", "minimum": 0, "maximum": 255}),
        ("n", {"type": "integer", "minimum": -32768, "maximum": 32767}),
        ("q", {"type": "integer", "minimum": 0, "maximum": 65535}),
        ("i", {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}),
        ("u", {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}),
        ("x", {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}),
        ("t", {"type": "integer", "minimum": 0, "maximum": 2**64 - 1}),
        ("d", {"type": "number"}),
        ("o", {"type": "string", "pattern": "^/([A-Za-z0-9_]+(/[A-Za-z0-9_]+)*)?$"}),
        ("v", {}),
        ("as", {"type": "array", "items": {"type": "string"}}),
        ("ay", {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}}),
        ("aas", {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}),
        ("a{sv}", {"type": "object"}),
        ("a{ss}", {"type": "object", "additionalProperties": {"type": "string"}}),
        ("a{sa{sv}}", {"type": "object", "additionalProperties": {"type": "object"}}),
        ("(sb)", {"type": "array", "items": [{"type": "string"}, {"type": "boolean"}], "minItems": 2, "maxItems": 2}),
        (
            "a(od)",
            {
                "type": "array",
                "items": {
                    "type": "array",
                    "items": [
                        {"type": "string", "pattern": "^/([A-Za-z0-9_]+(/[A-Za-z0-9_]+)*)?$"},
                        {"type": "number"},
                    ],
                    "minItems": 2,
                    "maxItems": 2,
                },
            },
        ),
        ("h", {"type": "integer", "description": "a Unix file descriptor"}),
    ],
)
def test_signatures_map_to_json_schemas(signature: str, schema: dict[str, Any]) -> None:
    assert schema_for(signature) == schema


def test_echo_service_becomes_a_valid_format_a_descriptor() -> None:
    result = generate("dev.aai.Echo", objects(root=node(), dev_aai_Echo=ECHO))
    doc = result.document
    assert {k: v for k, v in doc.items() if k != "platforms"} == {
        "schema_version": "1.0",
        "appId": "dev.aai.echo",
        "name": "Echo",
        "description": "Generated from the DBus introspection of dev.aai.Echo on the session bus "
        "(interfaces: com.aai.Executor, dev.aai.Echo).",
    }
    linux = doc["platforms"]["linux"]
    assert {k: v for k, v in linux.items() if k != "tools"} == {
        "automation": "dbus",
        "service": "dev.aai.Echo",
        "object": "/dev/aai/Echo",
        "interface": "dev.aai.Echo",
    }
    tools = by_name(doc)
    assert list(tools) == ["add", "echo", "calls", "get_label", "get_volume", "set_volume", "execute"]
    assert tools["add"] == {
        "name": "add",
        "description": "Calls the DBus method dev.aai.Echo.Add.",
        "parameters": {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
                "b": {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
            },
            "required": ["a", "b"],
        },
        "returns": {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
        "method": "Add",
    }
    assert tools["calls"]["parameters"] == {"type": "object", "properties": {}}
    assert tools["get_label"] == {
        "name": "get_label",
        "description": "Reads the DBus property dev.aai.Echo.Label (a string).",
        "parameters": {"type": "object", "properties": {}},
        "returns": {"type": "string"},
        "annotations": {"readOnlyHint": True},
        "property": "Label",
        "access": "get",
    }
    assert "set_label" not in tools
    assert tools["set_volume"] == {
        "name": "set_volume",
        "description": "Sets the DBus property dev.aai.Echo.Volume (a number).",
        "parameters": {"type": "object", "properties": {"volume": {"type": "number"}}, "required": ["volume"]},
        "annotations": {"idempotentHint": True},
        "property": "Volume",
        "access": "set",
    }
    assert tools["execute"]["interface"] == "com.aai.Executor"
    assert "object" not in tools["execute"]
    assert result.notes == ()
    assert result.app_id == "dev.aai.echo"
    assert result.tool_count == 7
    loaded = check_document(json.loads(json.dumps(doc)), "echo.json")
    assert loaded.ok, loaded.problems
    assert loaded.problems == ()


def test_format_c_puts_the_dbus_target_under_execution() -> None:
    result = generate("dev.aai.Echo", objects(dev_aai_Echo=ECHO), fmt="c", app_id="dev.aai.echo-generated")
    doc = result.document
    assert doc["schemaVersion"] == "1.0"
    assert doc["platform"] == "linux"
    assert doc["app"]["id"] == "dev.aai.echo-generated"
    assert doc["execution"] == {
        "type": "dbus",
        "service": "dev.aai.Echo",
        "objectPath": "/dev/aai/Echo",
        "interface": "dev.aai.Echo",
    }
    tools = by_name(doc)
    assert tools["echo"]["execution"] == {"method": "Echo"}
    assert tools["set_volume"]["execution"] == {"property": "Volume", "access": "set"}
    assert tools["execute"]["execution"] == {"method": "Execute", "interface": "com.aai.Executor"}
    assert tools["get_volume"]["annotations"] == {"readOnlyHint": True}
    loaded = check_document(doc, "echo.json")
    assert loaded.ok, loaded.problems
    assert loaded.descriptor is not None
    binding = loaded.descriptor.bindings["linux"]
    assert binding.automation == "dbus"
    assert binding.options == {"service": "dev.aai.Echo", "object": "/dev/aai/Echo", "interface": "dev.aai.Echo"}


@pytest.mark.parametrize(
    ("member", "kind", "hints"),
    [
        ("GetAll", "method", {"readOnlyHint": True}),
        ("Get", "method", {"readOnlyHint": True}),
        ("ListNames", "method", {"readOnlyHint": True}),
        ("IsRunning", "method", {"readOnlyHint": True}),
        ("HasOwner", "method", {"readOnlyHint": True}),
        ("QueryInfo", "method", {"readOnlyHint": True}),
        ("Getaway", "method", {}),  # a word that only starts like one
        ("Issue", "method", {}),
        ("Hash", "method", {}),
        ("Listen", "method", {}),
        ("SetVolume", "method", {}),
        ("Delete", "method", {}),
        ("Volume", "get", {"readOnlyHint": True}),
        ("Volume", "set", {"idempotentHint": True}),
    ],
)
def test_reading_members_are_marked_read_only(member: str, kind: Literal["method", "get", "set"], hints: Any) -> None:
    op = Operation("/", "org.example.App", member, kind, "", {"type": "object", "properties": {}})
    assert annotations_for(op) == hints


PLAYER = """
  <interface name="org.example.Player">
    <method name="Stop"/>
    <method name="GetVolume"><arg type="d" direction="out"/></method>
    <property name="Volume" type="d" access="readwrite"/>
    <method name="Seek"><arg type="x" direction="in"/><arg type="x" name="Offset" direction="in"/></method>
  </interface>"""
RECORDER = """
  <interface name="org.example.Recorder">
    <method name="Stop"/>
    <method name="Start"><arg type="s" name="file" direction="in"/><arg type="s" name="file" direction="in"/></method>
  </interface>"""


def test_names_stay_unique_and_arguments_are_named() -> None:
    result = generate("org.example.App", objects(org_example_App=node(PLAYER, RECORDER)))
    tools = by_name(result.document)
    assert list(tools) == [
        "player_stop",
        "get_volume",
        "seek",
        "get_volume_2",
        "set_volume",
        "recorder_stop",
        "start",
    ]
    assert tools["get_volume"]["method"] == "GetVolume"
    assert tools["get_volume_2"]["property"] == "Volume"
    assert list(tools["seek"]["parameters"]["properties"]) == ["arg0", "offset"]
    assert list(tools["start"]["parameters"]["properties"]) == ["file", "file_1"]
    assert result.document["platforms"]["linux"]["interface"] == "org.example.Player"
    assert tools["start"]["interface"] == "org.example.Recorder"
    assert check_document(result.document, "app.json").ok


def test_long_names_are_cut_to_64_characters_and_kept_unique() -> None:
    long = "A" + "b" * 70
    xml = f'<interface name="org.example.One"><method name="{long}"/><method name="{long}x"/></interface>'
    tools = tools_of(generate("org.example.App", objects(root=node(xml))).document)
    assert [t["name"] for t in tools] == ["a" + "b" * 63, "a" + "b" * 61 + "_2"]


def test_descriptions_come_from_annotations() -> None:
    xml = """
  <interface name="org.example.Notes">
    <method name="Add">
      <annotation name="org.freedesktop.DBus.Description" value="Add a note
         with a title."/>
      <arg type="s" name="title" direction="in">
        <annotation name="org.gtk.GDBus.DocString" value="The note's title"/>
      </arg>
    </method>
    <method name="Old">
      <annotation name="org.gtk.GDBus.DocString" value="Do the old thing."/>
      <annotation name="org.freedesktop.DBus.Deprecated" value="true"/>
    </method>
    <property name="Count" type="u" access="read">
      <annotation name="org.gtk.GDBus.DocString" value="How many notes there are."/>
    </property>
  </interface>"""
    tools = by_name(generate("org.example.Notes", objects(root=node(xml))).document)
    assert tools["add"]["description"] == "Add a note with a title."
    assert tools["add"]["parameters"]["properties"]["title"]["description"] == "The note's title"
    assert tools["old"]["description"] == "Do the old thing. (deprecated)"
    assert tools["get_count"]["description"] == "Reads Count: How many notes there are."


def test_objects_standard_interfaces_repeats_and_file_descriptors() -> None:
    main = '<interface name="org.example.Main"><method name="Ping"/></interface>'
    item = """<interface name="org.example.Item">
      <method name="Open"><arg type="s" name="mode" direction="in"/></method>
      <method name="Attach"><arg type="h" name="fd" direction="in"/></method>
      <property name="Handle" type="h" access="readwrite"/>
    </interface>"""
    result = generate(
        "org.example.Main",
        objects(
            root=node(STANDARD),
            org_example_Main=node(STANDARD, main),
            org_example_Main_items_b=node(item),
            org_example_Main_items_a=node(item),
            org_example_Main_items_c=node(item),
        ),
    )
    linux = result.document["platforms"]["linux"]
    assert (linux["object"], linux["interface"]) == ("/org/example/Main", "org.example.Main")
    tools = by_name(result.document)
    assert list(tools) == ["ping", "open", "get_handle"]
    assert "object" not in tools["ping"]
    assert tools["open"]["object"] == "/org/example/Main/items/a"
    assert tools["open"]["interface"] == "org.example.Item"
    assert result.notes == (
        "org.example.Item.Attach is left out: it takes a Unix file descriptor (DBus 'h')",
        "org.example.Item is also on 2 other objects; it is described once, at /org/example/Main/items/a",
    )
    assert check_document(result.document, "main.json").ok


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"app_id": "Not.Valid"}, "app id 'Not.Valid' is not a lowercase reverse-DNS id"),
        ({"app_id": "single"}, "app id 'single' is not a lowercase reverse-DNS id"),
        ({"fmt": "b"}, "unknown format 'b'"),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        generate("dev.aai.Echo", objects(root=node()), **kwargs)


def test_a_service_with_only_standard_interfaces_has_nothing_to_describe() -> None:
    with pytest.raises(ValueError, match="offers no methods or properties outside the standard"):
        generate("org.example.Empty", objects(root=node(STANDARD)))


def test_described_services_are_found_from_linux_bindings(tmp_path: Any) -> None:
    aai = tmp_path / ".aai"
    install_descriptor(aai, TEST_APPS / "dev.aai.echo" / "aai.json")
    install_descriptor(aai, TEST_APPS / "dev.aai.echo-ipc" / "aai.json")
    result = scan(load_settings({"HOME": str(tmp_path), "AAI_PLATFORM": "linux"}))
    assert described_by(result.apps.values()) == {"dev.aai.Echo": ("dev.aai.echo", "dev.aai.echo-ipc")}

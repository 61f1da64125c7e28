"""The library's knowledge in `--generate`, per source: DBus introspection XML, an OpenAPI document and
an sdef, each generated for real and then given a library of descriptors written into a folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dbus_fast.introspection import Node

from aai_gateway.authoring import generate, knowledge, openapi, sdef
from aai_gateway.authoring.knowledge import bundled, bundled_folder
from aai_gateway.descriptor.validate import check_document
from tests.support import ROOT

HEAD = '<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" ' + (
    '"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">\n'
)
NOTIFICATIONS = (
    HEAD
    + """<node>
  <interface name="org.freedesktop.Notifications">
    <method name="Notify">
      <arg name="app_name" type="s" direction="in"/><arg name="replaces_id" type="u" direction="in"/>
      <arg name="app_icon" type="s" direction="in"/><arg name="summary" type="s" direction="in"/>
      <arg name="body" type="s" direction="in"/><arg name="actions" type="as" direction="in"/>
      <arg name="hints" type="a{sv}" direction="in"/><arg name="expire_timeout" type="i" direction="in"/>
      <arg name="id" type="u" direction="out"/>
    </method>
    <method name="CloseNotification"><arg name="id" type="u" direction="in"/></method>
    <method name="GetCapabilities"><arg name="caps" type="as" direction="out"/></method>
    <method name="GetServerInformation">
      <arg type="s" direction="out"/><arg type="s" direction="out"/>
      <arg type="s" direction="out"/><arg type="s" direction="out"/>
    </method>
  </interface>
  <interface name="org.example.Extra">
    <method name="Snooze">
      <annotation name="org.freedesktop.DBus.Description" value="Hold   notifications back for a while."/>
      <arg name="minutes" type="u" direction="in"/><arg type="b" direction="in"/>
    </method>
    <method name="Forget"><annotation name="org.gtk.GDBus.DocString" value="Forget the history."/></method>
    <method name="Wipe"><annotation name="org.freedesktop.DBus.Deprecated" value="true"/></method>
  </interface>
</node>"""
)


def dbus_tools(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in doc["platforms"]["linux"]["tools"]}


def write_entry(folder: Path, document: dict[str, Any]) -> None:
    app_id = document["appId"] if "appId" in document else document["app"]["id"]
    (folder / app_id).mkdir(parents=True)
    (folder / app_id / "aai.json").write_text(json.dumps(document))


def test_a_bundled_entry_replaces_the_mechanical_tools_it_recognises() -> None:
    made = generate.generate(
        "org.freedesktop.Notifications", {"/org/freedesktop/Notifications": Node.parse(NOTIFICATIONS)}
    )
    assert made.sources == {
        "notify": "mechanical",
        "close_notification": "mechanical",
        "get_capabilities": "mechanical",
        "get_server_information": "mechanical",
        "snooze": "interface",
        "forget": "interface",
        "wipe": "mechanical",
    }
    assert list(dbus_tools(made.document)["snooze"]["parameters"]["properties"]) == ["minutes", "arg1"]
    assert dbus_tools(made.document)["snooze"]["description"] == "Hold notifications back for a while."
    assert dbus_tools(made.document)["wipe"]["description"].endswith("(deprecated)")

    applied = knowledge.apply(made.document, made.sources, bundled())
    assert applied.app == "org.freedesktop.notifications"
    assert knowledge.summary(applied.sources) == "descriptions: 4 from the library, 2 from the interface, 1 mechanical"
    tools = dbus_tools(applied.document)
    curated = json.loads((bundled_folder() / "org.freedesktop.notifications" / "aai.json").read_text())
    notify = next(t for t in curated["tools"] if t["name"] == "notify")
    assert tools["notify"]["description"] == notify["description"]
    assert tools["notify"]["parameters"] == notify["parameters"]
    assert tools["notify"]["annotations"] == notify["annotations"]
    assert tools["notify"]["timeout"] == 5
    assert tools["notify"]["method"] == "Notify"
    assert "interface" not in tools["notify"]
    assert applied.document["name"].startswith("Desktop notifications|Desktop-Benachrichtigungen|")
    assert "toast" in applied.document["aliases"]
    assert check_document(applied.document, "applied").ok


def test_an_interface_on_another_service_takes_tools_but_not_the_app(tmp_path: Path) -> None:
    objects = {"/org/freedesktop/Notifications": Node.parse(NOTIFICATIONS)}
    made = generate.generate("org.example.Notifier", objects, fmt="c")
    applied = knowledge.apply(made.document, made.sources, bundled())
    assert applied.app is None
    assert applied.document["app"]["name"] == "Notifier"
    tools = {t["name"]: t for t in applied.document["tools"]}
    assert applied.document["execution"]["service"] == "org.example.Notifier"
    assert tools["get_server_information"]["execution"] == {"method": "GetServerInformation"}
    assert tools["snooze"]["execution"] == {"method": "Snooze", "interface": "org.example.Extra"}
    assert tools["get_server_information"]["annotations"]["readOnlyHint"] is True
    assert check_document(applied.document, "applied").ok


def test_a_library_name_taken_by_another_tool_is_not_given_twice(tmp_path: Path) -> None:
    entry = {
        "schema_version": "1.0",
        "appId": "org.example.extra",
        "name": "Extra",
        "platforms": {
            "linux": {
                "automation": "dbus",
                "service": "org.example.Extra",
                "object": "/",
                "interface": "org.example.Extra",
                "tools": [
                    {
                        "name": "forget",
                        "description": "Hold notifications back.",
                        "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}}},
                        "args": ["${minutes}", True],
                        "method": "Snooze",
                    }
                ],
            }
        },
    }
    write_entry(tmp_path, entry)
    made = generate.generate(
        "org.freedesktop.Notifications", {"/org/freedesktop/Notifications": Node.parse(NOTIFICATIONS)}
    )
    applied = knowledge.apply(made.document, made.sources, bundled(tmp_path))
    tools = dbus_tools(applied.document)
    assert tools["snooze"]["description"] == "Hold notifications back."
    assert list(tools["snooze"]["parameters"]["properties"]) == ["minutes", "arg1"]  # args do not line up by position
    assert applied.sources["snooze"] == "library"
    assert "snooze keeps its name: the library's name forget is another tool's here" in applied.notes


SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Tasks", "version": "2"},
    "servers": [{"url": "https://api.example.com/v1"}],
    "paths": {
        "/tasks": {
            "get": {"parameters": [{"name": "tag", "in": "query", "schema": {"type": "string"}}]},
            "post": {
                "summary": "Create a task",
                "requestBody": {
                    "content": {"application/json": {"schema": {"type": "object", "properties": {"title": {}}}}}
                },
            },
        },
        "/tasks/{taskId}": {
            "get": {"parameters": [{"name": "taskId", "in": "path", "required": True, "schema": {"type": "string"}}]}
        },
    },
}
TASKS_ENTRY: dict[str, Any] = {
    "schema_version": "1.0",
    "appId": "com.example.tasks",
    "name": "Tasks|Aufgaben",
    "description": "A to-do list in the cloud.",
    "aliases": ["todo"],
    "platforms": {
        "web": {
            "automation": "restapi",
            "base_url": "https://api.example.com/v1",
            "tools": [
                {
                    "name": "read_task",
                    "description": "Read one task by its id.",
                    "annotations": {"readOnlyHint": True, "openWorldHint": True},
                    "parameters": {
                        "type": "object",
                        "properties": {"id": {"type": "string", "description": "The task's id, such as t-42."}},
                        "required": ["id"],
                    },
                    "endpoint": "/tasks/${id}",
                    "method": "GET",
                }
            ],
        }
    },
}


def test_an_openapi_operation_takes_the_library_tool_with_the_same_method_and_path(tmp_path: Path) -> None:
    made = openapi.generate(SPEC)
    assert made.sources == {"get_tasks": "mechanical", "post_tasks": "interface", "get_tasks_task_id": "mechanical"}
    write_entry(tmp_path, TASKS_ENTRY)
    applied = knowledge.apply(made.document, made.sources, bundled(tmp_path))
    web = applied.document["platforms"]["web"]
    tools = {t["name"]: t for t in web["tools"]}
    assert set(tools) == {"get_tasks", "post_tasks", "read_task"}
    read = tools["read_task"]
    assert read["endpoint"] == "/tasks/${id}"
    assert read["parameters"]["properties"]["id"]["description"] == "The task's id, such as t-42."
    assert read["parameters"]["required"] == ["id"]
    assert read["annotations"] == {"readOnlyHint": True, "openWorldHint": True}
    assert applied.sources == {"get_tasks": "mechanical", "post_tasks": "interface", "read_task": "library"}
    assert (applied.document["name"], applied.document["aliases"]) == ("Tasks|Aufgaben", ["todo"])
    assert check_document(applied.document, "applied").ok


def test_an_sdef_command_takes_the_library_tool_of_the_same_app_and_command(tmp_path: Path) -> None:
    dictionary = sdef.parse((ROOT / "tests" / "sdef" / "jotter.sdef").read_bytes(), "jotter.sdef")
    made = sdef.generate(dictionary, source="jotter.sdef", bundle_id="com.example.Jotter")
    assert set(made.sources.values()) == {"interface"}
    search = next(t for t in made.document["platforms"]["macos"]["tools"] if t["name"] == "search")
    entry = {
        "schema_version": "1.0",
        "appId": "com.example.jotter",
        "name": "Jotter",
        "platforms": {
            "macos": {
                "automation": "applescript",
                "bundle_id": "com.example.Jotter",
                "tools": [
                    {
                        "name": "find_notes",
                        "description": "Find the notes whose text contains a phrase; returns their names.",
                        "annotations": {"readOnlyHint": True},
                        "parameters": {
                            "type": "object",
                            "properties": {"target": {"type": "string", "description": "The phrase, such as milk."}},
                        },
                        "script": 'tell application id "com.example.Jotter"\n\tsearch "${target}"\nend tell\n',
                    }
                ],
            }
        },
    }
    write_entry(tmp_path, entry)
    applied = knowledge.apply(made.document, made.sources, bundled(tmp_path))
    tools = {t["name"]: t for t in applied.document["platforms"]["macos"]["tools"]}
    assert "search" not in tools
    found = tools["find_notes"]
    assert found["script"] == search["script"]
    assert found["parameters"]["properties"]["target"]["description"] == "The phrase, such as milk."
    assert found["annotations"] == {"readOnlyHint": True}
    assert applied.sources["find_notes"] == "library"
    assert applied.app == "com.example.jotter"
    assert check_document(applied.document, "applied").ok


def test_a_broken_library_entry_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "org.example.broken").mkdir()
    (tmp_path / "org.example.broken" / "aai.json").write_text('{"appId": ')
    write_entry(tmp_path, TASKS_ENTRY)
    assert [e.descriptor.app_id for e in bundled(tmp_path)] == ["com.example.tasks"]
    assert bundled(tmp_path / "missing") == []

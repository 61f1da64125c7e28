"""A descriptor's `events`: read into the model in every shape, and checked by `aai-gateway validate`."""

from __future__ import annotations

from typing import Any

import pytest

from aai_gateway.descriptor.guide import guide
from aai_gateway.descriptor.model import Event
from aai_gateway.descriptor.validate import check_document
from tests.descriptor.test_undo import MPV, doc_of, dunst, single, validate
from tests.library.library_gateway import LIBRARY

CLOSED: dict[str, Any] = {
    "name": "closed",
    "description": "A window closed.",
    "dbus": {"interface": "org.example.Windows", "member": "Closed", "fields": ["id", "reason"]},
    "when": "reason == `2`",
}
POLLED: dict[str, Any] = {
    "name": "louder",
    "description": "The volume went above a half.",
    "poll": {"tool": "volume", "every": 2},
    "when": "@ > `0.5`",
    "payload": {"level": "${@}"},
}


def test_events_are_read_into_the_model_in_every_shape(tmp_path: Any) -> None:
    for doc, tool in ((single(), "volume"), (doc_of(MPV), "volume"), (dunst(), "history_count")):
        polled = POLLED | {"poll": {"tool": tool, "every": 2}}
        doc["events"] = [CLOSED, polled]
        valid, problems = validate(tmp_path, doc)
        assert valid, problems
        loaded = check_document(doc, "aai.json").descriptor
        assert loaded is not None
        closed, louder = loaded.events
        assert closed == Event("closed", "A window closed.", "dbus", CLOSED["dbus"], "reason == `2`")
        assert (louder.kind, louder.source["tool"], louder.payload) == ("poll", tool, {"level": "${@}"})
        assert loaded.to_json()["events"] == [CLOSED, polled]
        assert [Event.from_json(e) for e in loaded.to_json()["events"]] == [closed, louder]
        assert "## Events" in guide(loaded, "linux")


@pytest.mark.hostile("validation")
def test_every_problem_of_an_event_is_named_at_its_pointer(tmp_path: Any) -> None:
    doc = single()
    doc["events"] = [
        CLOSED | {"when": "system('id')"},
        CLOSED | {"dbus": {"interface": "no dots", "member": "Bad-Name", "object": "relative", "fields": ["a", "a"]}},
        POLLED | {"poll": {"tool": "set_volume", "every": 2}, "payload": {"x": "${unclosed"}},
        POLLED | {"name": "other", "poll": {"tool": "missing", "every": 2}},
    ]
    valid, problems = validate(tmp_path, doc)
    assert not valid
    said = {(pointer, message) for pointer, _, message in problems}
    assert (
        "/events/0/when",
        "${system('id')} calls system, which JMESPath does not have; its functions are the "
        "ones of jmespath.org (length, join, keys, …)",
    ) in said
    assert ("/events/1/name", "event name 'closed' is already used by event 0") in said
    assert (
        "/events/1/dbus/interface",
        "'no dots' is not a DBus interface name such as org.mpris.MediaPlayer2.Player",
    ) in said
    assert ("/events/1/dbus/member", "'Bad-Name' is not a DBus signal name such as PropertiesChanged") in said
    assert ("/events/1/dbus/object", "'relative' is not a DBus object path such as /org/mpris/MediaPlayer2") in said
    assert ("/events/1/dbus/fields/1", "field 'a' is named twice") in said
    assert any(p == "/events/2/poll/tool" and "not marked read-only" in m for p, m in said)
    assert any(p == "/events/2/payload" and "has no closing '}'" in m for p, m in said)
    assert ("/events/3/poll/tool", "'missing' is not a tool of this app; its tools are: set_volume, volume") in said


@pytest.mark.hostile("validation")
@pytest.mark.parametrize(
    ("event", "pointer"),
    [
        ({"name": "both", "description": "", "dbus": CLOSED["dbus"], "poll": POLLED["poll"]}, "/events/0"),
        ({"name": "neither", "description": ""}, "/events/0"),
        ({"name": "fast", "description": "", "poll": {"tool": "volume", "every": 0.01}}, "/events/0/poll/every"),
        ({"name": "has space", "description": "", "dbus": CLOSED["dbus"]}, "/events/0/name"),
    ],
)
def test_the_shape_of_an_event_is_checked_by_the_schema(tmp_path: Any, event: dict[str, Any], pointer: str) -> None:
    doc = single()
    doc["events"] = [event]
    valid, problems = validate(tmp_path, doc)
    assert not valid
    assert pointer in [p for p, severity, _ in problems if severity == "error"], problems


def test_every_library_event_validates_and_the_guide_lists_it() -> None:
    declared = set()
    for path in sorted(LIBRARY.glob("*/aai.json")):
        loaded = check_document(doc_of(path), str(path))
        assert loaded.descriptor is not None, loaded.problems
        assert [p for p in loaded.problems if p.pointer.startswith("/events")] == [], path
        text = guide(loaded.descriptor, "linux")
        for event in loaded.descriptor.events:
            declared.add(f"{loaded.descriptor.app_id}:{event.name}")
            assert f"### {event.name}\n" in text
    assert {"org.mpris.mediaplayer2:track_changed", "org.freedesktop.notifications:notification_closed"} <= declared
    assert "com.transmissionbt.transmission:torrents_finished" in declared


def mcp_server() -> dict[str, Any]:
    """Shape B: an MCP server as an app."""
    return {
        "schema_version": "1.0",
        "version": "1.0.0",
        "platform": "mcp",
        "app": {"id": "mcp.notes", "name": "Notes", "description": "A notes server."},
        "execution": {"type": "mcp", "command": "notes-server"},
    }


NOTES_CHANGED: dict[str, Any] = {
    "name": "notes_changed",
    "description": "The notes changed.",
    "mcp": {"notification": "notifications/resources/updated", "uri": "file:///notes.md"},
}
ERRORS: dict[str, Any] = {
    "name": "errors",
    "description": "The server logged an error.",
    "mcp": {"notification": "notifications/message", "level": "error"},
    "when": "logger == 'sync'",
}


def test_mcp_notifications_are_read_in_every_shape_an_mcp_server_has(tmp_path: Any) -> None:
    snake = mcp_server()
    camel = {k: v for k, v in snake.items() if k != "schema_version"} | {"schemaVersion": "1.0"}
    for doc in (snake, camel):
        doc["events"] = [NOTES_CHANGED, ERRORS]
        valid, problems = validate(tmp_path, doc)
        assert valid, problems
        loaded = check_document(doc, "aai.json").descriptor
        assert loaded is not None
        changed, errors = loaded.events
        assert changed == Event("notes_changed", "The notes changed.", "mcp", NOTES_CHANGED["mcp"])
        assert (errors.kind, errors.source["level"], errors.when) == ("mcp", "error", "logger == 'sync'")
        assert loaded.to_json()["events"] == [NOTES_CHANGED, ERRORS]
        text = guide(loaded, "linux")
        assert "the gateway subscribes to file:///notes.md while somebody waits" in text
        assert "only level error and more severe" in text


@pytest.mark.hostile("validation")
def test_every_problem_of_an_mcp_event_is_named_at_its_pointer(tmp_path: Any) -> None:
    doc = mcp_server()
    doc["events"] = [
        ERRORS | {"mcp": {"notification": "notifications/tools/list_changed", "uri": "file:///x", "level": "info"}},
    ]
    valid, problems = validate(tmp_path, doc)
    assert not valid
    said = {(pointer, message) for pointer, _, message in problems}
    assert (
        "/events/0/mcp/uri",
        "only notifications/resources/updated concerns one resource, not notifications/tools/list_changed",
    ) in said
    assert (
        "/events/0/mcp/level",
        "only notifications/message has a level, not notifications/tools/list_changed",
    ) in said
    doc["events"] = [  # what the schema says no to
        NOTES_CHANGED | {"name": "loud", "mcp": {"notification": "notifications/message", "level": "shouting"}},
        NOTES_CHANGED | {"name": "progress", "mcp": {"notification": "notifications/progress"}},
    ]
    valid, problems = validate(tmp_path, doc)
    assert not valid
    pointers = {pointer for pointer, severity, _ in problems if severity == "error"}
    assert {"/events/0/mcp/level", "/events/1/mcp/notification"} <= pointers, problems
    other = single()
    other["events"] = [NOTES_CHANGED]
    valid, problems = validate(tmp_path, other)
    assert not valid
    assert (
        "/events/0/mcp",
        "error",
        "an mcp event hears an MCP server's notifications, and this app is no MCP server (execution type mcp)",
    ) in problems

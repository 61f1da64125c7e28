"""Service patterns (`org.mpris.MediaPlayer2.*`) are taken only where a call can pick an instance, in every shape."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from aai_gateway.authoring.dbus_services import described_by, describing
from aai_gateway.descriptor import instances
from aai_gateway.descriptor.validate import check_document
from tests.support import ROOT, TEST_APPS

MPRIS = ROOT / "src" / "aai_gateway" / "library" / "apps" / "org.mpris.mediaplayer2" / "aai.json"
INSTANCE = {
    "argument": "player",
    "label": {"interface": "org.mpris.MediaPlayer2", "property": "Identity"},
    "prefer": {"interface": "org.mpris.MediaPlayer2.Player", "property": "PlaybackStatus", "value": "Playing"},
}


def camel() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(MPRIS.read_text("utf-8"))
    return loaded


def multi() -> dict[str, Any]:
    """The mpv example (shape A) turned into one for every MPRIS player."""
    doc: dict[str, Any] = json.loads((TEST_APPS / "io.mpv" / "aai.json").read_text("utf-8"))
    linux = doc["platforms"]["linux"]
    linux["service"] = "org.mpris.MediaPlayer2.*"
    linux["instance"] = copy.deepcopy(INSTANCE)
    linux["tools"].append(
        {"name": "list_players", "description": "The players running.", "parameters": {}, "instances": True}
    )
    return doc


def errors(doc: dict[str, Any]) -> list[tuple[str, str]]:
    loaded = check_document(doc, "aai.json")
    return [(p.pointer, p.message) for p in loaded.problems if p.severity == "error"]


@pytest.mark.parametrize("make", [camel, multi], ids=["camel", "multi"])
def test_every_tool_takes_the_player_argument_but_the_list(make: Any) -> None:
    loaded = check_document(make(), "aai.json")
    assert loaded.ok, loaded.problems
    assert not loaded.problems
    assert loaded.descriptor is not None
    [binding] = loaded.descriptor.bindings.values()
    picking = instances.of(binding)
    assert picking is not None
    assert (picking.prefix, picking.argument) == ("org.mpris.MediaPlayer2.", "player")
    assert picking.prefer is not None
    assert picking.prefer.value == "Playing"
    for tool in binding.tools:
        props = tool.parameters.get("properties", {})
        if instances.lists_instances(tool):
            assert "player" not in props
        else:
            assert props["player"]["type"] == "string", tool.name
            assert "player" not in tool.parameters.get("required", [])


def test_the_made_up_description_names_the_prefix_label_and_preference() -> None:
    doc = multi()
    loaded = check_document(doc, "aai.json")
    assert loaded.descriptor is not None
    described = loaded.descriptor.bindings["linux"].tools[0].parameters["properties"]["player"]["description"]
    assert described == (
        "Which running instance to use: the end of its bus name after 'org.mpris.MediaPlayer2.', or its Identity. "
        "Leave it out to use the one whose PlaybackStatus is 'Playing', else the only one running."
    )


def test_a_pattern_needs_an_instance_block() -> None:
    doc = camel()
    del doc["execution"]["instance"]
    # the undos passing `player` on are reported too: without the block no tool takes it
    assert [e for e in errors(doc) if "/undo/" not in e[0]] == [
        (
            "/execution/service",
            "the pattern org.mpris.MediaPlayer2.* needs an `instance` block saying how a call picks one of the "
            'matching services, such as {"argument": "player"}',
        )
    ]


def test_an_instance_block_or_list_needs_a_pattern() -> None:
    doc = multi()
    doc["platforms"]["linux"]["service"] = "org.mpris.MediaPlayer2.vlc"
    assert errors(doc) == [
        (
            "/platforms/linux/instance",
            "`instance` is only for a service pattern ending in '.*' (such as org.mpris.MediaPlayer2.*)",
        ),
        (
            f"/platforms/linux/tools/{len(doc['platforms']['linux']['tools']) - 1}/instances",
            "lists the instances of a service pattern, but the binding's service is one exact name",
        ),
    ]


def test_a_pattern_is_only_for_direct_dbus() -> None:
    doc = camel()
    doc["execution"]["type"] = "ipc"
    found = errors(doc)
    assert found[0] == (
        "/execution/service",
        "the pattern org.mpris.MediaPlayer2.* is only for a direct DBus binding (platform linux, execution type "
        "dbus); other bindings call one exact bus name",
    )


def test_a_pattern_must_end_the_name_and_not_name_a_tool_service() -> None:
    doc = multi()
    doc["platforms"]["linux"]["service"] = "org.mpris.*.Player"
    assert errors(doc)[0][0] == "/platforms/linux/service"
    doc = multi()
    doc["platforms"]["linux"]["tools"][0]["service"] = "org.mpris.MediaPlayer2.*"
    assert errors(doc)[0][0] == "/platforms/linux/tools/0/service"


def test_a_tool_may_not_declare_the_argument() -> None:
    doc = camel()
    doc["tools"][1]["parameters"]["properties"]["player"] = {"type": "string"}
    assert errors(doc) == [
        (
            "/tools/1/parameters/properties/player",
            "'player' is the binding's instance argument, which the gateway adds to every tool; rename this parameter",
        )
    ]


def test_the_argument_is_a_name() -> None:
    doc = camel()
    doc["execution"]["instance"]["argument"] = "the player"
    assert errors(doc)[0][0] == "/execution/instance/argument"
    doc = camel()
    doc["execution"]["instance"]["prefer"].pop("value")
    assert errors(doc)[0][0] == "/execution/instance/prefer"


def test_discover_names_the_pattern_entry_for_each_matching_player() -> None:
    loaded = check_document(camel(), "aai.json")
    assert loaded.descriptor is not None
    owners = described_by([loaded.descriptor])
    assert owners == {"org.mpris.MediaPlayer2.*": ("org.mpris.mediaplayer2",)}
    assert describing(owners, "org.mpris.MediaPlayer2.vlc") == ("org.mpris.mediaplayer2",)
    assert describing(owners, "org.mpris.MediaPlayer2.") == ()
    assert describing(owners, "org.mpris.MediaPlayer3.vlc") == ()

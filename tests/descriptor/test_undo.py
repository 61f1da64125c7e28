"""A tool's `undo`: read into the model in every shape, and checked by `aai-gateway validate`, a pointer per problem."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.descriptor.guide import guide
from aai_gateway.descriptor.model import Undo, UndoRead
from aai_gateway.descriptor.validate import check_document
from tests.library.library_gateway import LIBRARY
from tests.support import TEST_APPS, gateway_command

DUNST = LIBRARY / "org.dunstproject.dunst" / "aai.json"
MPV = TEST_APPS / "io.mpv" / "aai.json"
SET_DND = 1  # the index of set_do_not_disturb in the dunst entry's tools
VOLUME_UNDO = {
    "tool": "set_volume",
    "args": {"level": "${before}"},
    "before": {"tool": "volume", "args": {}},
}


def doc_of(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return loaded


def dunst() -> dict[str, Any]:
    doc = doc_of(DUNST)
    assert doc["tools"][SET_DND]["name"] == "set_do_not_disturb"
    return doc


def single() -> dict[str, Any]:
    """Shape B: a settings app behind the gateway's envelope, with a setter and its getter."""
    level = {"type": "object", "properties": {"level": {"type": "number", "minimum": 0, "maximum": 1}}}
    return {
        "schema_version": "1.0",
        "version": "1.0.0",
        "platform": "linux",
        "app": {"id": "dev.example.mixer", "name": "Mixer", "description": "A mixer."},
        "execution": {"type": "ipc", "service": "dev.example.Mixer"},
        "tools": [
            {
                "name": "volume",
                "description": "The volume.",
                "parameters": {"type": "object", "properties": {}},
                "annotations": {"readOnlyHint": True},
            },
            {
                "name": "set_volume",
                "description": "Set the volume.",
                "parameters": level | {"required": ["level"]},
                "undo": VOLUME_UNDO,
            },
        ],
    }


def validate(tmp_path: Path, doc: dict[str, Any]) -> tuple[bool, list[tuple[str, str, str]]]:
    """`aai-gateway validate --json` on `doc`: whether it is valid, and (pointer, severity, message) per problem."""
    path = tmp_path / "app" / "aai.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(doc))
    done = subprocess.run(
        [gateway_command(), "validate", "--json", str(path)],
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path), "AAI_PLATFORM": "linux"},
        timeout=60,
        check=False,
    )
    [result] = json.loads(done.stdout)
    assert done.returncode == (0 if result["valid"] else 1), done.stderr
    return result["valid"], [(p["pointer"], p["severity"], p["message"]) for p in result["problems"]]


def test_an_undo_is_read_into_the_model_in_every_shape(tmp_path: Path) -> None:
    mpv = doc_of(MPV)
    [set_volume] = [t for t in mpv["platforms"]["linux"]["tools"] if t["name"] == "set_volume"]
    set_volume["undo"] = VOLUME_UNDO
    expected = Undo("set_volume", {"level": "${before}"}, UndoRead("volume", {}))
    for doc, tool in ((single(), "set_volume"), (mpv, "set_volume"), (dunst(), "set_do_not_disturb")):
        assert validate(tmp_path, doc) == (True, [])
        loaded = check_document(doc, "aai.json").descriptor
        assert loaded is not None
        found = loaded.find_tool("linux", tool)
        assert found is not None
        undo = found[1].undo
        assert undo is not None
        assert "undo" not in found[1].options  # not an executor's option
        if tool == "set_volume":
            assert undo == expected
        as_json = loaded.to_json()
        [written] = [t for b in as_json["bindings"].values() for t in b["tools"] if t["name"] == tool]
        assert written["undo"] == undo.to_json()
        assert Undo.from_json(written["undo"]) == undo
    assert all("undo" not in t for b in as_json["bindings"].values() for t in b["tools"] if t["name"] == "history")


def test_undo_arguments_leave_out_what_the_step_was_not_given() -> None:
    undo = Undo(
        "set_volume",
        {"level": "${before}", "player": "${args.player}", "note": "was ${result.text}"},
        UndoRead("volume", {"player": "${args.player}"}),
    )
    assert undo.arguments({"level": 0.3}, {"text": "ok"}, 0.8) == {"level": 0.8, "note": "was ok"}
    assert undo.arguments({"level": 0.3, "player": "mpv"}, None, 0.8)["player"] == "mpv"
    assert undo.before is not None
    assert undo.before.arguments({}) == {}
    assert undo.before.arguments({"player": "vlc"}) == {"player": "vlc"}


def test_every_problem_of_an_undo_is_named_at_its_pointer(tmp_path: Path) -> None:
    doc = dunst()
    at = f"/tools/{SET_DND}/undo"
    doc["tools"][SET_DND]["undo"] = {
        "tool": "set_dnd",
        "args": {"on": "${before}", "when": "${steps.first.result}", "bad": "${args.[}"},
        "befor": {},
    }
    doc["tools"][0]["undo"] = {"tool": "set_do_not_disturb", "args": {"on": "yes"}}
    doc["tools"][2]["undo"] = {"tool": "set_do_not_disturb", "args": {}, "before": {"tool": "close_all"}}
    doc["tools"][3]["undo"] = {
        "tool": "show_from_history",
        "args": {"id": -1},
        "before": {"tool": "history", "args": {"since": "${result}"}},
    }
    valid, problems = validate(tmp_path, doc)
    assert not valid
    tools = ", ".join(sorted(t["name"] for t in doc["tools"]))
    read = "the queries here read args (the step's arguments), result (its result)"
    assert problems == [
        ("/tools/0/undo", "warning", "the tool is marked read-only, so it has nothing to undo"),
        (
            "/tools/0/undo/args/on",
            "error",
            "does not fit 'set_do_not_disturb': must be a boolean (true or false), got a string (\"yes\")",
        ),
        (f"{at}/tool", "error", f"'set_dnd' is not a tool of this app on this platform; its tools are: {tools}"),
        (f"{at}/args/on", "error", f"reads 'before', but no before read is declared (undo.before); {read}"),
        (f"{at}/args/when", "error", f"reads 'steps', which is not given here; {read}"),
        (
            f"{at}/args/bad",
            "error",
            '${args.[} is not a JMESPath query: Invalid jmespath expression: Incomplete expression: "args.[" ^',
        ),
        ("/tools/2/undo", "warning", "the tool is marked read-only, so it has nothing to undo"),
        ("/tools/2/undo/args", "error", "'set_do_not_disturb' requires 'on', which is not given"),
        (
            "/tools/2/undo/before/tool",
            "warning",
            "'close_all' is not marked read-only (readOnlyHint); a before read should change nothing",
        ),
        ("/tools/3/undo", "warning", "the tool is marked read-only, so it has nothing to undo"),
        ("/tools/3/undo/args/id", "error", "does not fit 'show_from_history': must be at least 0; got -1"),
        (
            "/tools/3/undo/before/args/since",
            "error",
            "reads 'result', which is not given here; the queries here read args (the step's arguments)",
        ),
        (
            "/tools/3/undo/before/args/since",
            "error",
            "'since' is not a parameter of 'history'; its parameters are: none",
        ),
        (f"{at}/befor", "warning", "unknown key 'befor' (did you mean 'before'?)"),
    ]


def test_the_undo_tool_must_be_of_the_same_binding(tmp_path: Path) -> None:
    doc = doc_of(MPV)
    web_tool: dict[str, Any] = {"name": "remote_volume", "description": "x", "endpoint": "/volume", "method": "GET"}
    web_tool["parameters"] = {"type": "object", "properties": {}}
    doc["platforms"]["web"] = {"automation": "restapi", "base_url": "https://mpv.example.org", "tools": [web_tool]}
    tools = doc["platforms"]["linux"]["tools"]
    index = next(i for i, t in enumerate(tools) if t["name"] == "set_volume")
    tools[index]["undo"] = {"tool": "set_volume", "args": {"level": "${before}"}, "before": {"tool": "remote_volume"}}
    valid, problems = validate(tmp_path, doc)
    assert not valid
    listed = ", ".join(sorted(t["name"] for t in tools))
    assert problems == [
        (
            f"/platforms/linux/tools/{index}/undo/before/tool",
            "error",
            f"'remote_volume' is not a tool of this app on this platform; its tools are: {listed}",
        )
    ]


def test_the_shape_of_an_undo_is_checked_by_the_schema(tmp_path: Path) -> None:
    doc = single()
    doc["tools"][1]["undo"] = {"args": {"level": 1}, "before": {"tool": 3}}
    valid, problems = validate(tmp_path, doc)
    assert not valid
    assert [(p, s) for p, s, _ in problems] == [("/tools/1/undo", "error"), ("/tools/1/undo/before/tool", "error")]
    assert "'tool'" in problems[0][2]


def test_an_mcp_apps_override_cannot_carry_an_undo(tmp_path: Path) -> None:
    doc = {
        "schemaVersion": "1.0",
        "version": "1.0.0",
        "platform": "mcp",
        "app": {"id": "dev.example.server", "name": {"en": "Server"}, "description": "An MCP server."},
        "execution": {"type": "mcp", "command": "example-server"},
        "tools": [{"name": "create", "undo": {"tool": "delete", "args": {"id": "${result.id}"}}}],
    }
    assert validate(tmp_path, doc) == (
        True,
        [
            (
                "/tools/0/undo",
                "warning",
                "an mcp app's tools are the server's own, and an undo is only for tools a descriptor declares; "
                "it has no effect here",
            )
        ],
    )


@pytest.mark.hostile("validation")
def test_huge_and_deep_undo_templates_are_problems_not_crashes(tmp_path: Path) -> None:
    doc = single()
    deep: Any = "${before}"
    for _ in range(200):
        deep = {"x": deep}
    doc["tools"][1]["undo"] = {
        "tool": "set_volume",
        "args": {"level": "${" + "before." * 20_000 + "x}", "deep": deep, "calls": "${system('id')}"},
        "before": {"tool": "volume"},
    }
    valid, problems = validate(tmp_path, doc)
    assert not valid
    said = "\n".join(f"{p}: {m}" for p, _, m in problems)
    assert "/tools/1/undo/args/level: a ${…} query may hold 1000 characters, this one 140001" in said
    assert "/tools/1/undo/args/deep" + "/x" * 32 + ": is nested deeper than 32 levels" in said
    assert "/tools/1/undo/args/calls: ${system('id')} calls system, which JMESPath does not have" in said
    assert "/tools/1/undo/args/deep: 'deep' is not a parameter of 'set_volume'" in said


def test_every_library_undo_validates_and_the_guide_names_it() -> None:
    declared = 0
    for path in sorted(LIBRARY.glob("*/aai.json")):
        doc = doc_of(path)
        loaded = check_document(doc, str(path))
        assert loaded.descriptor is not None, loaded.problems
        assert [p for p in loaded.problems if "/undo" in p.pointer] == [], path
        with_undo = [t for b in loaded.descriptor.bindings.values() for t in b.tools if t.undo is not None]
        if with_undo:
            version = tuple(int(part) for part in doc["version"].split("."))
            assert version >= (1, 1, 0), path  # so that outdated offers the entries that gained them
        text = guide(loaded.descriptor, "linux")
        for tool in with_undo:
            assert tool.undo is not None
            line = f"**Undo**: a plan that fails after this step undoes it with `{tool.undo.tool}`."
            assert line in text.split(f"### {tool.name}\n", 1)[1].split("### ", 1)[0], (path, tool.name)
        declared += len(with_undo)
    assert declared >= 40


def test_a_copy_of_the_library_entry_without_its_before_read_is_refused() -> None:
    doc = dunst()
    broken = copy.deepcopy(doc)
    del broken["tools"][SET_DND]["undo"]["before"]
    loaded = check_document(broken, "aai.json")
    assert loaded.descriptor is None
    assert [p.pointer for p in loaded.problems] == [f"/tools/{SET_DND}/undo/args/on"]

"""Tool annotations: read from every descriptor shape into the model, and listed on the gateway's own tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.config import load_settings
from aai_gateway.descriptor import Annotations
from aai_gateway.descriptor.validate import check_document
from aai_gateway.mcp.catalogue import tool_list
from aai_gateway.mcp.names import Names
from aai_gateway.service import Gateway
from tests.support import EXAMPLES, TEST_APPS, install_descriptor

PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}
HINTS = {"readOnlyHint": True, "openWorldHint": False}

MULTI = {
    "schema_version": "1.0",
    "appId": "org.example.notes",
    "name": "Notes",
    "platforms": {
        "linux": {
            "automation": "dbus",
            "service": "org.example.Notes",
            "tools": [{"name": "count", "description": "Count", "parameters": PARAMETERS, "method": "Count"}],
        }
    },
}
SINGLE = {
    "schema_version": "1.0",
    "version": "1.0.0",
    "platform": "web",
    "app": {"id": "org.example.notes", "name": "Notes", "description": "Notes"},
    "execution": {"type": "http", "base_url": "https://api.example.com"},
    "tools": [{"name": "count", "description": "Count", "parameters": PARAMETERS, "execution": {"path": "/count"}}],
}
CAMEL = {
    "schemaVersion": "1.0",
    "platform": "linux",
    "app": {"id": "org.example.notes", "name": {"en": "Notes"}},
    "execution": {"type": "dbus", "service": "org.example.Notes"},
    "tools": [{"name": "count", "description": "Count", "inputSchema": PARAMETERS, "execution": {"method": "Count"}}],
}


def tools_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = doc["platforms"]["linux"]["tools"] if "platforms" in doc else doc["tools"]
    return tools


@pytest.mark.parametrize("doc", [MULTI, SINGLE, CAMEL], ids=["multi", "single", "camel"])
def test_every_shape_carries_annotations_into_the_model(doc: dict[str, Any]) -> None:
    doc = json.loads(json.dumps(doc))
    tools_of(doc)[0]["annotations"] = HINTS
    loaded = check_document(doc, "aai.json")
    assert loaded.descriptor is not None, loaded.problems
    [binding] = loaded.descriptor.bindings.values()
    [tool] = binding.tools
    assert tool.annotations == Annotations(read_only=True, open_world=False)
    assert (tool.read_only, tool.destructive) == (True, False)
    assert "annotations" not in tool.options
    assert loaded.descriptor.to_json()["bindings"][binding.platform]["tools"][0]["annotations"] == HINTS


@pytest.mark.parametrize("doc", [MULTI, SINGLE, CAMEL], ids=["multi", "single", "camel"])
@pytest.mark.parametrize(
    ("hints", "pointer", "message"),
    [
        ({"readonly": True}, "/annotations", "unknown field 'readonly'"),
        ({"title": "Count"}, "/annotations", "unknown field 'title'"),
        ({"idempotentHint": 1}, "/annotations/idempotentHint", "must be a boolean (true or false), got an integer (1)"),
        ([], "/annotations", "must be an object"),
        ({"readOnlyHint": True, "destructiveHint": True}, "/annotations", "both read-only and destructive"),
    ],
)
def test_bad_annotations_are_problems_with_their_pointer(
    doc: dict[str, Any], hints: Any, pointer: str, message: str
) -> None:
    doc = json.loads(json.dumps(doc))
    tools_of(doc)[0]["annotations"] = hints
    loaded = check_document(doc, "aai.json")
    assert not loaded.ok
    base = "/platforms/linux/tools/0" if "platforms" in doc else "/tools/0"
    assert [(p.pointer, message in p.message) for p in loaded.problems] == [(base + pointer, True)]


def test_a_tool_without_annotations_claims_nothing() -> None:
    loaded = check_document(json.loads(json.dumps(MULTI)), "aai.json")
    assert loaded.descriptor is not None
    [tool] = loaded.descriptor.bindings["linux"].tools
    assert tool.annotations == Annotations()
    assert tool.annotations.to_json() == {}
    assert (tool.read_only, tool.destructive) == (False, False)


def test_the_listing_marks_guides_read_only_and_exec_possibly_destructive(tmp_path: Path) -> None:
    install_descriptor(tmp_path / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    install_descriptor(tmp_path / ".aai", EXAMPLES / "dev.aai.notes" / "aai.json")
    settings = load_settings({"HOME": str(tmp_path), "AAI_PLATFORM": "linux"})
    gateway = Gateway(settings)
    listed = {t["name"]: t for t in tool_list(gateway, Names(gateway.apps(), "linux", "strict"))}
    assert listed["app_dev_aai_echo"]["annotations"] == {"readOnlyHint": True}
    assert listed["app_dev_aai_notes"]["annotations"] == {"readOnlyHint": True}
    assert listed["web_discover"]["annotations"] == {
        "title": "Discover a web app",
        "readOnlyHint": True,
        "openWorldHint": True,
    }
    for name in ("aai_exec", "aai_batch"):
        hints = listed[name]["annotations"]
        assert "readOnlyHint" not in hints
        assert (hints["destructiveHint"], hints["openWorldHint"]) == (True, True)
        assert hints["title"]
    assert all(list(t)[-1] == "annotations" for t in listed.values())  # the SDK's field order

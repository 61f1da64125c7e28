from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from aai_gateway.descriptor.guide import catalogue_entry, example_args, guide
from aai_gateway.descriptor.validate import load
from tests.support import EXAMPLES, ROOT

SEEDS = ROOT / "tests" / "golden" / "seeds"


def test_catalogue_entry_follows_seed_004_exactly() -> None:
    app = load(SEEDS / "seed001-desktop-reminders-completed.json").descriptor
    assert app is not None
    assert catalogue_entry(app) == (
        "【Reminders|提醒事项|Rappels|Erinnerungen】Task and reminder management. "
        "Aliases: reminder, todo, 待办, tasks. Call to get guide."
    )


def test_catalogue_entry_without_aliases_and_with_a_final_period() -> None:
    app = load(SEEDS / "seed003-mail-multi.json").descriptor
    assert app is not None
    assert catalogue_entry(app) == "【Mail】Apple's native email client. Call to get guide."


def test_guide_matches_the_layout_of_seed_004() -> None:
    app = load(SEEDS / "seed001-desktop-reminders-completed.json").descriptor
    assert app is not None
    assert guide(app, "macos") == (
        "# Reminders Operation Guide\n\n## App Info\n\n- ID: com.example.reminders\n- Platform: macos\n"
        "- Names: Reminders | 提醒事项 | Rappels | Erinnerungen\n- Aliases: reminder, todo, 待办, tasks\n"
        "- Description: Task and reminder management\n\n"
        "## Authentication\n\nUses OS-level consent (TCC). First execution shows native dialog.\n\n"
        "## Available Operations\n\n### create_reminder\n\nCreate a new reminder\n\n**Parameters**:\n\n"
        "- title (string, required): Reminder title\n- due (string, optional): Due datetime YYYY-MM-DD HH:MM\n"
        '- list (string, optional): List name\n\n**Example**:\naai:exec({\napp: "com.example.reminders",\n'
        'tool: "create_reminder",\nargs: { title: "<title>" }\n})\n\n---\n\n'
        "Use aai:exec tool to execute operations.\n"
    )


def test_multi_platform_descriptor_serves_host_platform_plus_web() -> None:
    app = load(SEEDS / "seed000-mail-multi.json").descriptor
    assert app is not None
    text = guide(app, "linux")
    assert "- Platform: linux, web" in text
    assert "### send_email" in text
    assert "### search" in text
    assert [(b.platform, t.name) for b, t in app.tools("linux")] == [("linux", "send_email"), ("web", "search")]
    assert [b.platform for b in app.served("macos")] == ["macos", "web"]
    assert app.find_tool("linux", "send_email") is not None
    assert app.find_tool("linux", "search_emails") is None


@pytest.mark.parametrize("source", sorted(EXAMPLES.glob("*/aai.json")), ids=lambda p: p.parent.name)
def test_guide_examples_of_bundled_apps_validate_against_their_schemas(source: Path) -> None:
    app = load(source).descriptor
    assert app is not None
    for _, tool in app.tools("linux"):
        Draft7Validator(tool.parameters).validate(example_args(tool.parameters))


json_scalars = st.sampled_from(["string", "integer", "number", "boolean"])
schemas = st.recursive(
    json_scalars.map(lambda t: {"type": t}),
    lambda inner: st.one_of(
        inner.map(lambda s: {"type": "array", "items": s}),
        st.dictionaries(st.from_regex(r"[a-z]{1,8}", fullmatch=True), inner, max_size=4).map(
            lambda props: {"type": "object", "properties": props, "required": sorted(props)}
        ),
    ),
    max_leaves=8,
)


@given(schemas.map(lambda s: {"type": "object", "properties": {"x": s}, "required": ["x"]}))
def test_example_arguments_always_validate(schema: dict[str, Any]) -> None:
    Draft7Validator(schema).validate(example_args(schema))

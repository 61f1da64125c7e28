"""The catalogue entry and the operation guide, laid out as seed 004 lays them out."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from aai_gateway.descriptor.guide import LIMITS, catalogue_entry, guide, hint_words
from aai_gateway.descriptor.model import Annotations, Binding, Descriptor, Name, Tool
from aai_gateway.descriptor.parameters import parameter_lines
from aai_gateway.descriptor.validate import load
from tests.support import EXAMPLES, ROOT
from tests.unit.test_examples import parameter_schemas

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
    assert guide(app, "macos", exec_name="aai:exec") == (
        "# Reminders Operation Guide\n\n## App Info\n\n- ID: com.example.reminders\n- Platform: macos\n"
        "- Names: Reminders | 提醒事项 | Rappels | Erinnerungen\n- Aliases: reminder, todo, 待办, tasks\n"
        "- Description: Task and reminder management\n\n"
        "## Authentication\n\nUses OS-level consent (TCC). First execution shows native dialog.\n\n"
        "## Retries\n\nmacos: macOS starts the app when a call addresses it; a call is never repeated.\n\n"
        f"{LIMITS}\n\n"
        "## Available Operations\n\n### create_reminder\n\nCreate a new reminder\n\n**Parameters**:\n\n"
        "- title (string, required): Reminder title\n- due (string, optional): Due datetime YYYY-MM-DD HH:MM\n"
        '- list (string, optional): List name\n\n**Example**:\naai:exec({\napp: "com.example.reminders",\n'
        'tool: "create_reminder",\nargs: { title: "<title>" }\n})\n\n---\n\n'
        "Use aai:exec tool to execute operations.\n"
    )


def test_names_carry_their_language_tags() -> None:
    app = Descriptor(
        app_id="dev.aai.cal",
        names=(Name("Calendar", "en"), Name("日历", "zh-Hans"), Name("Kalender")),
        description="Dates",
        bindings={"linux": Binding("linux", "dbus", ())},
        shape="camel",
        aliases=("cal", "日程"),
    )
    text = guide(app, "linux")
    assert "- Names: Calendar (en) | 日历 (zh-Hans) | Kalender\n- Aliases: cal, 日程\n" in text


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


def test_tool_without_parameters_says_none() -> None:
    app = Descriptor(
        app_id="dev.aai.x",
        names=(Name("X"),),
        description="",
        bindings={"linux": Binding("linux", "dbus", (Tool("ping", "", {"type": "object", "properties": {}}),))},
        shape="multi",
    )
    assert "**Parameters**:\n\n- none\n\n**Example**:\naai_exec({\n" in guide(app, "linux")
    assert 'tool: "ping",\nargs: {}\n})' in guide(app, "linux")


@settings(deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(parameter_schemas())
def test_guide_renders_every_schema(schema: dict[str, Any]) -> None:
    tool = Tool("t", "A tool", schema)
    app = Descriptor("dev.aai.t", (Name("T"),), "", {"linux": Binding("linux", "dbus", (tool,))}, "multi")
    text = guide(app, "linux")
    top = [line for line in parameter_lines(schema) if line.startswith("- ")]
    assert [line.split(" (")[0][2:] for line in top] == list(schema["properties"])
    assert text.endswith("Use aai_exec tool to execute operations.\n")


def test_each_operation_shows_the_hints_that_are_true_of_it() -> None:
    app = load(EXAMPLES / "dev.aai.notes" / "aai.json").descriptor
    assert app is not None
    text = guide(app, "linux")
    sections = {part.split("\n", 1)[0]: part for part in text.split("### ")[1:]}
    assert "\n**Hints**: read-only\n\n**Parameters**" in sections["list_notes"]
    assert "\n**Hints**: destructive, idempotent\n\n**Parameters**" in sections["delete_note"]
    assert "**Hints**" not in sections["add_note"]  # destructiveHint false: nothing true to say
    assert hint_words(Annotations(True, False, True, True)) == ["read-only", "idempotent", "open-world"]
    assert hint_words(Annotations()) == []

"""sdef → aai.json (shape A, macos, AppleScript): parsing, the type table, scripts, names, refusals."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.authoring import sdef
from aai_gateway.authoring.sdef import Dictionary, Mapped, TypeRef
from aai_gateway.descriptor.validate import check_document
from aai_gateway.executors.applescript import prepare
from aai_gateway.templates import PLACEHOLDER
from tests.support import ROOT

SDEFS = ROOT / "tests" / "sdef"
JOTTER = SDEFS / "jotter.sdef"
BUNDLE = "com.example.Jotter"
URGENCY = ["low", "normal", "very high"]


def read(name: str) -> Dictionary:
    path = SDEFS / name
    return sdef.parse(path.read_bytes(), str(path))


def tools_of(generated: sdef.Generated) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in generated.document["platforms"]["macos"]["tools"]}


@pytest.fixture(scope="module")
def jotter() -> Dictionary:
    return read("jotter.sdef")


@pytest.fixture(scope="module")
def generated(jotter: Dictionary) -> sdef.Generated:
    return sdef.generate(jotter, source=str(JOTTER), bundle_id=BUNDLE, app_name="Jotter")


def wrap(body: str) -> bytes:
    return f'<?xml version="1.0"?>\n<dictionary title="T">\n{body}\n</dictionary>\n'.encode()


# --- parsing ----------------------------------------------------------------------------------


def test_parse_reads_suites_commands_and_types(jotter: Dictionary) -> None:
    assert jotter.title == "Jotter Terminology"
    assert jotter.suites == ("Jotter Suite", "Jotter Internals")
    names = [c.name for c in jotter.commands]
    assert names[:4] == ["add note", "summarize", "remind", "count words"]
    assert [c.name for c in jotter.commands if c.hidden] == ["dump state", "reset caches"]
    assert jotter.enumerations == {"urgency": ("low", "normal", "very high")}
    assert set(jotter.records["note summary"]) == {"title", "word count", "tags", "urgency", "edited"}
    assert jotter.records["note summary"]["tags"] == (TypeRef("text", is_list=True),)
    assert {"note", "notes", "notebook", "notebooks"} <= jotter.classes
    assert jotter.value_types == frozenset({"colour"})


def test_parse_reads_parameters_with_cocoa_keys_and_type_children(jotter: Dictionary) -> None:
    add = jotter.commands[0]
    assert add.description == "Add a note to a notebook."
    assert add.direct is not None
    assert add.direct.types == (TypeRef("text"),)
    assert add.direct.description == "The note's text."
    assert [(p.name, p.types, p.optional) for p in add.params] == [
        ("titled", (TypeRef("text"),), False),
        ("in notebook", (TypeRef("notebook"),), False),
        ("with tags", (TypeRef("text", is_list=True),), True),
        ("urgency", (TypeRef("urgency"),), True),
    ]
    assert add.result == (TypeRef("note"),)
    assert add.result_description == "The new note."
    imported = next(c for c in jotter.commands if c.name == "import files")
    assert imported.result == (TypeRef("text", is_list=True),)  # the older type="list of text"


def test_includes_are_not_followed_but_noted(jotter: Dictionary) -> None:
    assert jotter.notes == (
        f"{JOTTER} includes file:///System/Library/ScriptingDefinitions/CocoaStandard.sdef, "
        "which is not followed: what it defines is left out",
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("malformed.sdef", "7:4: not well-formed XML (mismatched tag)"),
        ("entities.sdef", "4:16: declares an XML entity, which an sdef may not do"),
    ],
)
def test_bad_files_name_the_place(name: str, message: str) -> None:
    with pytest.raises(sdef.SdefError) as caught:
        read(name)
    assert str(caught.value) == f"{SDEFS / name}: {message}"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "x.sdef: 1:1: not well-formed XML (no element found)"),
        (b"<dictionary><suite></dictionary>", "x.sdef: 1:22: not well-formed XML (mismatched tag)"),
        (b"<dictionary>&nbsp;</dictionary>", "x.sdef: 1:13: not well-formed XML (undefined entity)"),
        (
            b'<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><dictionary>&x;</dictionary>',
            "x.sdef: 1:52: declares an XML entity, which an sdef may not do",
        ),
        (
            b'<!DOCTYPE d [<!ENTITY % p SYSTEM "http://example.invalid/x">%p;]><dictionary/>',
            "x.sdef: 1:60: declares an XML entity, which an sdef may not do",
        ),
        (b"<plist><dict/></plist>", "x.sdef: the root element is <plist>, not an sdef's <dictionary>"),
        (b" " * (sdef.MAX_SDEF_BYTES + 1), f"x.sdef: is larger than {sdef.MAX_SDEF_BYTES} bytes"),
    ],
)
def test_refusals(data: bytes, message: str) -> None:
    with pytest.raises(sdef.SdefError) as caught:
        sdef.parse(data, "x.sdef")
    assert str(caught.value) == message


def test_an_entity_bomb_is_refused_before_it_expands() -> None:
    levels = "".join(f'<!ENTITY e{i} "{f"&e{i - 1};" * 10}">' for i in range(1, 10))
    data = f'<!DOCTYPE d [<!ENTITY e0 "ha">{levels}]><dictionary title="&e9;"/>'.encode()
    with pytest.raises(sdef.SdefError, match="declares an XML entity"):
        sdef.parse(data, "bomb.sdef")


# --- the type table ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "kind", "schema"),
    [
        (TypeRef("text"), "text", {"type": "string"}),
        (TypeRef("Unicode text"), "text", {"type": "string"}),
        (TypeRef("integer"), "value", {"type": "integer"}),
        (TypeRef("real"), "value", {"type": "number"}),
        (TypeRef("number"), "value", {"type": "number"}),
        (TypeRef("boolean"), "value", {"type": "boolean"}),
        (TypeRef("date"), "date", {"type": "string", "format": "date-time", "pattern": sdef.DATE_PATTERN}),
        (TypeRef("file"), "file", {"type": "string"}),
        (TypeRef("alias"), "file", {"type": "string"}),
        (TypeRef("'file'"), "file", {"type": "string"}),
        (TypeRef("any"), "value", {}),
        (TypeRef("list"), "value", {"type": "array"}),
        (TypeRef("text", is_list=True), "text", {"type": "array", "items": {"type": "string"}}),
        (TypeRef("integer", is_list=True), "value", {"type": "array", "items": {"type": "integer"}}),
        (TypeRef("file", is_list=True), "file", {"type": "array", "items": {"type": "string"}}),
        (TypeRef("record"), "unbindable", {"type": "object"}),
        (TypeRef("note summary"), "unbindable", {"type": "object"}),
        (TypeRef("type"), "unbindable", {"type": "string"}),
        (TypeRef("specifier"), "unbindable", {"type": "string"}),
        (TypeRef("location specifier"), "unbindable", {"type": "string"}),
        (TypeRef("urgency"), "enum", {"type": "string", "enum": URGENCY}),
        (TypeRef("urgency", is_list=True), "enum", {"type": "array", "items": {"type": "string", "enum": URGENCY}}),
        (TypeRef("note"), "class", {"type": "string"}),
        (TypeRef("notebooks"), "class", {"type": "string"}),
        (TypeRef("colour"), "value", {}),
        (TypeRef("something else"), "value", {}),
    ],
)  # fmt: skip
def test_type_table(jotter: Dictionary, ref: TypeRef, kind: str, schema: dict[str, Any]) -> None:
    mapped = sdef.map_type(ref, jotter)
    assert (mapped.kind, dict(mapped.schema), mapped.is_list) == (kind, schema, ref.is_list)


def test_choose_takes_the_first_type_that_travels_as_data(jotter: Dictionary) -> None:
    assert sdef.choose((TypeRef("specifier"), TypeRef("text")), jotter).kind == "text"
    assert sdef.choose((TypeRef("type"), TypeRef("record")), jotter).words.startswith("a type")
    assert sdef.choose((), jotter) == Mapped("value", {}, "any value")


@pytest.mark.parametrize(
    ("types", "schema"),
    [
        ((), {}),
        ((TypeRef("integer"),), {"type": "integer"}),
        ((TypeRef("text", is_list=True),), {"type": "array", "items": {"type": "string"}}),
        ((TypeRef("urgency"),), {"type": "string", "enum": ["low", "normal", "very high"]}),
        ((TypeRef("note"),), {"type": "string", "description": "a reference, as AppleScript writes it"}),
        ((TypeRef("date"),), {"type": "string", "description": "the date as AppleScript writes it"}),
        ((TypeRef("record"),), {"type": "object"}),
    ],
)
def test_returns_table(jotter: Dictionary, types: tuple[TypeRef, ...], schema: dict[str, Any]) -> None:
    assert sdef.returns_schema(types, jotter) == schema


def test_a_record_type_result_lists_its_properties_and_stops_at_itself() -> None:
    records = {"node": {"label": (TypeRef("text"),), "next": (TypeRef("node"),)}}
    dictionary = Dictionary("T", (), (), records=records)
    assert sdef.returns_schema((TypeRef("node"),), dictionary) == {
        "type": "object",
        "properties": {"label": {"type": "string"}, "next": {}},
    }


# --- generation -------------------------------------------------------------------------------


def test_the_descriptor_validates_with_the_package_validator(generated: sdef.Generated) -> None:
    loaded = check_document(generated.document, "generated")
    assert loaded.problems == ()
    assert loaded.descriptor is not None
    binding = loaded.descriptor.bindings["macos"]
    assert binding.automation == "applescript"
    assert binding.options == {"bundle_id": BUNDLE}
    assert generated.app_id == "com.example.jotter"
    assert generated.tool_count == 9
    assert generated.document["name"] == "Jotter"
    assert generated.document["description"] == (
        "Generated from the scripting definition (sdef) of Jotter (suites: Jotter Suite)."
    )


def test_one_tool_per_command_that_can_run(generated: sdef.Generated) -> None:
    assert list(tools_of(generated)) == [
        "add_note", "summarize", "remind", "count_words", "scale_text", "export_notes", "import_files", "search",
        "focus",
    ]  # fmt: skip
    assert generated.notes[1:] == (
        "'new item' (Jotter Suite) is left out: its parameter 'new' is a type (a class name), "
        "which cannot be passed as data",
        "'configure' (Jotter Suite) is left out: its direct parameter is a record, "
        "which AppleScript cannot build from data",
        "hidden commands are left out: dump state, reset caches",
    )


def test_every_script_passes_the_applescript_rewriter(generated: sdef.Generated) -> None:
    for tool in tools_of(generated).values():
        prepared = prepare(tool["script"], tool["parameters"])
        assert {slot.name for slot in prepared.slots} == set(tool["parameters"]["properties"])
        assert PLACEHOLDER.search(prepared.source) is None


def test_placeholders_are_exactly_the_schema_properties(generated: sdef.Generated) -> None:
    for tool in tools_of(generated).values():
        schema = tool["parameters"]
        assert set(PLACEHOLDER.findall(tool["script"])) == set(schema["properties"])
        assert schema.get("required", []) == list(schema["properties"])


def test_text_values_are_whole_literals_and_the_rest_bare(generated: sdef.Generated) -> None:
    tool = tools_of(generated)["count_words"]
    assert tool["script"] == (
        'tell application id "com.example.Jotter"\n'
        '\tcount words "${target}" skipping punctuation ${skipping_punctuation}\n'
        "end tell\n"
    )
    assert tool["parameters"] == {
        "type": "object",
        "properties": {
            "target": {"type": "string"},
            "skipping_punctuation": {"type": "boolean", "description": "Skip punctuation marks."},
        },
        "required": ["target", "skipping_punctuation"],
    }
    assert tool["returns"] == {"type": "integer"}
    assert tool["output_parser"] == "result as text"
    assert tool["description"] == "Count the words in some text. From the Jotter Suite."


def test_optional_parameters_are_named_in_the_description(generated: sdef.Generated) -> None:
    tool = tools_of(generated)["add_note"]
    assert tool["description"] == (
        "Add a note to a notebook. From the Jotter Suite. Returns the new note. "
        "Not exposed (optional in the sdef): with tags, urgency."
    )
    assert tool["script"] == (
        'tell application id "com.example.Jotter"\n'
        '\tset in_notebook_value to notebook named "${in_notebook}"\n'
        '\tadd note "${target}" titled "${titled}" in notebook in_notebook_value\n'
        "end tell\n"
    )
    assert tool["parameters"]["properties"]["in_notebook"] == {
        "type": "string",
        "description": "Where the note goes. The name of a notebook.",
    }
    assert tools_of(generated)["focus"]["parameters"] == {"type": "object", "properties": {}}
    assert tools_of(generated)["focus"]["description"].endswith(
        "Not exposed (optional in the sdef): the direct parameter, of kind."
    )


def test_enumerations_become_constants_through_fixed_comparisons(generated: sdef.Generated) -> None:
    script = tools_of(generated)["remind"]["script"]
    head = script.split("\non iso_date(iso_text)\n")[0]
    assert head == (
        'tell application id "com.example.Jotter"\n'
        '\tset target_value to note named "${target}"\n'
        '\tset at_value to my iso_date("${at}")\n'
        '\tif "${with_urgency}" is "low" then\n'
        "\t\tset with_urgency_value to low\n"
        '\telse if "${with_urgency}" is "normal" then\n'
        "\t\tset with_urgency_value to normal\n"
        '\telse if "${with_urgency}" is "very high" then\n'
        "\t\tset with_urgency_value to very high\n"
        "\tend if\n"
        "\tremind target_value at at_value with urgency with_urgency_value\n"
        "end tell\n"
    )
    assert script.endswith(sdef.DATE_HANDLER)
    at = tools_of(generated)["remind"]["parameters"]["properties"]["at"]
    assert at["format"] == "date-time"
    for good in ("2025-03-01T09:30:00", "2025-03-01T09:30:00Z", "2025-03-01T09:30:00-05:00"):
        assert re.match(at["pattern"], good)
    for bad in ("2025-03-01", "2025-03-01 09:30:00", "2025-03-01T09:30:00.5Z"):
        assert not re.match(at["pattern"], bad)


def test_lists_of_files_classes_and_enumerations_are_converted_item_by_item(generated: sdef.Generated) -> None:
    tool = tools_of(generated)["export_notes"]
    assert tool["script"] == (
        'tell application id "com.example.Jotter"\n'
        "\tset target_value to {}\n"
        "\trepeat with target_item in ${target}\n"
        "\t\tset end of target_value to note named ((contents of target_item) as text)\n"
        "\tend repeat\n"
        '\tset to_value to "${to}" as POSIX file\n'
        "\tset in_formats_value to {}\n"
        "\trepeat with in_formats_item in ${in_formats}\n"
        '\t\tif ((contents of in_formats_item) as text) is "low" then\n'
        "\t\t\tset end of in_formats_value to low\n"
        '\t\telse if ((contents of in_formats_item) as text) is "normal" then\n'
        "\t\t\tset end of in_formats_value to normal\n"
        '\t\telse if ((contents of in_formats_item) as text) is "very high" then\n'
        "\t\t\tset end of in_formats_value to very high\n"
        "\t\tend if\n"
        "\tend repeat\n"
        "\texport notes target_value to to_value in formats in_formats_value\n"
        "end tell\n"
    )
    assert tool["parameters"]["properties"]["target"]["description"] == "The notes to export. Names of note objects."
    assert tool["output_parser"] == "result as record"
    imported = tools_of(generated)["import_files"]["script"]
    assert "\t\tset end of target_value to ((contents of target_item) as text) as POSIX file\n" in imported
    assert "\t\tset end of dated_value to my iso_date(((contents of dated_item) as text))\n" in imported


def test_record_results_are_read_as_records(generated: sdef.Generated) -> None:
    tool = tools_of(generated)["summarize"]
    assert tool["output_parser"] == "result as record"
    assert tool["returns"] == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "word_count": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "urgency": {"type": "string", "enum": ["low", "normal", "very high"]},
            "edited": {"type": "string", "description": "the date as AppleScript writes it"},
        },
    }


def test_standard_commands_that_need_specifiers_are_left_out() -> None:
    generated = sdef.generate(read("standard.sdef"), source="standard.sdef", bundle_id="com.example.plainly")
    tools = tools_of(generated)
    assert list(tools) == ["open", "quit"]
    assert tools["open"]["script"] == (
        'tell application id "com.example.plainly"\n'
        '\tset target_value to "${target}" as POSIX file\n'
        "\topen target_value\n"
        "end tell\n"
    )
    assert tools["quit"]["script"] == 'tell application id "com.example.plainly"\n\tquit\nend tell\n'
    assert generated.notes == (
        "'close' (Standard Suite) is left out: its direct parameter is an object specifier, "
        "which cannot be passed as data",
        "'count' (Standard Suite) is left out: its direct parameter is an object specifier, "
        "which cannot be passed as data",
        "'make' (Standard Suite) is left out: its parameter 'new' is a type (a class name), "
        "which cannot be passed as data",
    )
    assert check_document(generated.document, "standard").problems == ()


def test_without_a_bundle_id_the_app_is_addressed_by_name(jotter: Dictionary) -> None:
    generated = sdef.generate(jotter, source="jotter.sdef")
    assert generated.app_id == "local.jotter"
    assert "bundle_id" not in generated.document["platforms"]["macos"]
    assert all(t["script"].startswith('tell application "Jotter"\n') for t in tools_of(generated).values())
    assert generated.notes[-2] == (
        "no bundle id is known: the scripts address the app by its name 'Jotter' (--app-id sets one)"
    )
    with_id = sdef.generate(jotter, source="jotter.sdef", app_id="com.example.jotter")
    assert with_id.document["platforms"]["macos"]["bundle_id"] == "com.example.jotter"
    assert tools_of(with_id)["search"]["script"].startswith('tell application id "com.example.jotter"\n')


def test_names_come_from_the_bundle_then_the_title(jotter: Dictionary) -> None:
    assert sdef.app_name_from("Jotter Terminology") == "Jotter"
    assert sdef.app_name_from("Plainly") == "Plainly"
    assert sdef.app_name_from("Mail Scripting Definitions") == "Mail"
    hostile = 'Jot" & (do shell script "id") & "'
    generated = sdef.generate(jotter, source="x", app_name=hostile)
    assert generated.document["name"] == "Jotter"
    assert all("do shell script" not in t["script"] for t in tools_of(generated).values())
    odd = sdef.generate(jotter, source="x", bundle_id='com.example"x')
    assert 'tell application "Jotter"' in tools_of(odd)["search"]["script"]
    assert odd.notes[-3] == "the bundle id 'com.example\"x' is not usable in a script; the app is addressed by name"


def test_refusals_of_generate(jotter: Dictionary) -> None:
    with pytest.raises(ValueError, match="only the multi-platform shape can hold; leave out --format c"):
        sdef.generate(jotter, source="x", fmt="c")
    with pytest.raises(ValueError, match="app id 'Jotter' is not a lowercase reverse-DNS id"):
        sdef.generate(jotter, source="x", app_id="Jotter")
    hidden_only = sdef.parse(
        wrap('<suite name="S" code="Sss1" hidden="yes"><command name="go" code="Sss1Go  "/></suite>'), "h"
    )
    with pytest.raises(ValueError, match="h describes no command that can run with arguments passed as data"):
        sdef.generate(hidden_only, source="h", bundle_id="com.example.h")
    untitled = sdef.parse(b'<dictionary><suite name="S"><command name="go"/></suite></dictionary>', "u")
    with pytest.raises(ValueError, match="u names no app"):
        sdef.generate(untitled, source="u")


@pytest.mark.parametrize(
    "body",
    [
        '<command name="go&quot; &amp; (do shell script &quot;id&quot;) &amp; &quot;" code="SuitGoGo"/>',
        '<command name="go" code="SuitGoGo"><parameter name="${x}" code="Sx  " type="text"/></command>',
        '<command name="go" code="SuitGoGo"><parameter name="to-x" code="Sx  " type="text"/></command>',
        '<command name="go" code="SuitGoGo"><direct-parameter type="mode"/></command>'
        '<enumeration name="mode" code="Smod"><enumerator name="a&quot;b" code="Sab "/></enumeration>',
        '<command name="go" code="SuitGoGo"><direct-parameter type="th|ng"/></command>'
        '<class name="th|ng" code="Sthn"/>',
    ],
)
def test_terminology_that_cannot_be_written_safely_leaves_the_command_out(body: str) -> None:
    dictionary = sdef.parse(
        wrap(f'<suite name="S" code="Suit">{body}<command name="ok" code="SuitOkOk"/></suite>'), "t"
    )
    generated = sdef.generate(dictionary, source="t", bundle_id="com.example.t")
    assert list(tools_of(generated)) == ["ok"]
    assert "left out" in generated.notes[0]
    assert "terminology the generator" in generated.notes[0]


def test_names_are_unique_and_never_the_gateways_own() -> None:
    body = (
        '<command name="go" code="SuitGo01"><direct-parameter type="text"/>'
        '<parameter name="target" code="St  " type="integer"/><parameter name="aai text" code="Sa  " type="text"/>'
        '</command><command name="Go" code="SuitGo02"/>'
    )
    dictionary = sdef.parse(wrap(f'<suite name="S" code="Suit">{body}</suite>'), "t")
    generated = sdef.generate(dictionary, source="t", bundle_id="com.example.t")
    tools = tools_of(generated)
    assert list(tools) == ["go", "go_2"]
    assert list(tools["go"]["parameters"]["properties"]) == ["target", "target_2", "x_aai_text"]
    assert tools["go"]["script"] == (
        'tell application id "com.example.t"\n\tgo "${target}" target ${target_2} aai text "${x_aai_text}"\nend tell\n'
    )
    prepare(tools["go"]["script"], tools["go"]["parameters"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [("x.sdef", True), ("/A/Jotter.SDEF", True), ("/Applications/Mail.app", True), ("/Applications/Mail.app/", True),
     ("./Mail.app", True), ("org.example.App", False), ("api.json", False), ("https://x.test/openapi.json", False)],
)  # fmt: skip
def test_is_source(text: str, expected: bool) -> None:
    assert sdef.is_source(text) is expected


def test_checked_in_files_are_ours() -> None:
    for path in Path(SDEFS).glob("*.sdef"):
        assert "Written for aai-gateway's tests" in path.read_text(encoding="utf-8"), path

"""The library's own checks: loading entries (bundled and broken), search, presence, the docs table."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from aai_gateway.descriptor import Name
from aai_gateway.executors.dbus_names import BusNames
from aai_gateway.library.entries import Entry, Presence, apps_root, bundled, entry_validator, load_folder
from aai_gateway.library.presence import entries_for, judge, matches, pointers
from aai_gateway.library.search import near, search
from aai_gateway.library.table import markdown
from tests.support import ROOT

DBUS = "org.freedesktop.dbus"
BUNDLED_DIR = Path(str(apps_root()))


def test_every_bundled_entry_loads_without_a_problem() -> None:
    catalog = bundled()
    assert not catalog.problems, "\n".join(map(str, catalog.problems))
    folders = sorted(p.name for p in BUNDLED_DIR.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    assert [e.app_id for e in sorted(catalog.entries, key=lambda e: e.app_id)] == folders
    for entry in catalog.entries:
        assert entry.verified is not None
        assert (ROOT / entry.verified.test).is_file(), f"{entry.app_id} names {entry.verified.test}, which is missing"
        raw = json.loads((BUNDLED_DIR / entry.app_id / "entry.json").read_text("utf-8"))
        assert not list(entry_validator().iter_errors(raw))


def test_every_bundled_tool_is_annotated_and_described() -> None:
    for entry in bundled().entries:
        assert entry.descriptor is not None
        for binding in entry.descriptor.bindings.values():
            for tool in binding.tools:
                where = f"{entry.app_id}:{tool.name}"
                assert tool.annotations.read_only is not None, f"{where} has no readOnlyHint"
                assert tool.annotations.destructive is not None or tool.read_only, f"{where} has no destructiveHint"
                assert len(tool.description) >= 20, where
                props = tool.parameters.get("properties", {})
                assert all(p.get("description") for p in props.values()), f"{where}: a parameter has no description"


def broken_library(tmp_path: Path) -> Path:
    root = tmp_path / "apps"
    source = BUNDLED_DIR / DBUS
    for name in ("good.one", "no.entry", "bad.level", "wrong.id", "bad.json"):
        target = root / name
        target.mkdir(parents=True)
        doc = json.loads((source / "aai.json").read_text("utf-8"))
        doc["app"]["id"] = "some.other" if name == "wrong.id" else name
        (target / "aai.json").write_text(json.dumps(doc))
        shutil.copyfile(source / "entry.json", target / "entry.json")
    (root / "no.entry" / "entry.json").unlink()
    entry = json.loads((source / "entry.json").read_text("utf-8"))
    entry["verified"]["level"] = "trust-me"
    (root / "bad.level" / "entry.json").write_text(json.dumps(entry))
    (root / "bad.json" / "aai.json").write_text("{not json")
    return root


def test_a_broken_entry_is_a_reported_problem_and_the_others_load(tmp_path: Path) -> None:
    catalog = load_folder(broken_library(tmp_path))
    assert [e.app_id for e in catalog.entries] == ["good.one"]
    text = "\n".join(map(str, catalog.problems))
    assert "no.entry/entry.json: is missing" in text
    assert 'bad.level/entry.json#/verified/level: must be one of "run", "interface"; got "trust-me"' in text
    assert "its appId is 'some.other', not the folder's name 'wrong.id'" in text
    assert "bad.json/aai.json: invalid JSON" in text


def test_a_missing_library_folder_is_a_problem(tmp_path: Path) -> None:
    catalog = load_folder(tmp_path / "nowhere")
    assert not catalog.entries
    assert "cannot be listed" in str(catalog.problems[0])


def made(app_id: str, names: dict[str, str], **more: object) -> Entry:
    fields: dict[str, object] = {"description": "", "version": "1.0.0", "source": "bundled"} | more
    return Entry(app_id, tuple(Name(t, lang) for lang, t in names.items()), **fields)  # type: ignore[arg-type]


PLAYER = made(
    "org.example.player",
    {"en": "Media player", "de": "Medienwiedergabe", "es": "Reproductor multimedia"},
    aliases=("music", "vlc"),
    tools=("play_pause", "seek"),
    description="Plays music and videos.",
)
NOTES = made("org.example.notes", {"en": "Notes"}, aliases=("memo",), description="Keeps notes about music lessons.")
VIDEO = made("org.example.video", {"en": "Video cutter"}, tools=("export_music_track",), description="Cuts videos.")


def ids(entries: list[Entry]) -> list[str]:
    return [e.app_id for e in entries]


def test_search_finds_names_in_every_language_aliases_and_tools_case_and_accents_aside() -> None:
    library = [PLAYER, NOTES, VIDEO]
    assert ids(search(library, "MEDIENWIEDERGABE")) == ["org.example.player"]
    assert ids(search(library, "reproductor")) == ["org.example.player"]
    assert ids(search(library, "memo")) == ["org.example.notes"]
    assert ids(search(library, "seek")) == ["org.example.player"]
    assert ids(search(library, "médiá")) == ["org.example.player"]
    assert ids(search(library, "player music")) == ["org.example.player"]
    assert search(library, "music nothing") == []


def test_search_ranks_an_alias_over_a_tool_over_a_description() -> None:
    assert ids(search([NOTES, VIDEO, PLAYER], "music")) == [
        "org.example.player",
        "org.example.video",
        "org.example.notes",
    ]


def test_an_empty_query_lists_everything_by_name() -> None:
    assert ids(search([VIDEO, NOTES, PLAYER], "")) == ["org.example.player", "org.example.notes", "org.example.video"]


def test_the_bundled_dbus_entry_is_found_in_german_and_chinese() -> None:
    assert DBUS in ids(search(bundled().entries, "sitzungs"))
    assert DBUS in ids(search(bundled().entries, "会话"))


def test_near_suggests_ids_close_to_a_mistyped_one() -> None:
    library = [PLAYER, NOTES, VIDEO]
    assert near(library, "org.example.playr")[0] == "org.example.player"
    assert near(library, "vlc") == ["org.example.player"]
    assert near(library, "zzz.qqq") == []


MPRIS = Presence("session", ("org.mpris.MediaPlayer2.*",), ("vlc",))


def test_presence_matches_exact_names_and_trailing_star_prefixes() -> None:
    assert matches("org.mpris.MediaPlayer2.*", "org.mpris.MediaPlayer2.vlc")
    assert not matches("org.mpris.MediaPlayer2.*", "org.mpris.MediaPlayer")
    assert matches("org.freedesktop.DBus", "org.freedesktop.DBus")
    assert not matches("org.freedesktop.DBus", "org.freedesktop.DBus.Extra")


def test_presence_prefers_running_then_activatable_then_a_command() -> None:
    running = BusNames(frozenset({"org.mpris.MediaPlayer2.vlc"}), frozenset())
    startable = BusNames(frozenset({"org.x"}), frozenset({"org.mpris.MediaPlayer2.mpv"}))
    nothing = BusNames(frozenset(), frozenset())
    assert judge(MPRIS, running, {}).why == "running on the session bus: org.mpris.MediaPlayer2.vlc"
    assert judge(MPRIS, startable, {}).why == "activatable on the session bus: org.mpris.MediaPlayer2.mpv"
    assert judge(MPRIS, nothing, {"vlc": "/usr/bin/vlc"}).why == "command vlc (/usr/bin/vlc)"
    assert judge(MPRIS, nothing, {"vlc": None}).state == "no"
    for which in ({"vlc": None}, {"vlc": "/usr/bin/vlc"}):  # a command alone does not make it run
        cannot = judge(MPRIS, "the session bus could not be asked: no bus", which)
        assert (cannot.state, cannot.text()) == ("cannot", "cannot run here: its session bus cannot be reached")
        assert cannot.problem == "the session bus could not be asked: no bus"
    assert judge(MPRIS, running, {}).text() == "running on the session bus: org.mpris.MediaPlayer2.vlc"
    assert judge(MPRIS, nothing, {"vlc": "/v"}).text() == "on this machine, not running (command vlc (/v))"
    assert judge(None, nothing, {}).state == "unknown"


def test_discover_points_at_entries_for_the_names_it_finds_unless_installed() -> None:
    player = made("org.example.player", {"en": "Media player"}, presence=MPRIS)
    found = entries_for(["org.mpris.MediaPlayer2.vlc", "org.other"], [player, NOTES])
    assert list(found) == ["org.mpris.MediaPlayer2.vlc"]
    lines = pointers(found)
    assert lines[-1] == (
        "  org.mpris.MediaPlayer2.vlc: Media player, in the library: aai-gateway install org.example.player"
    )
    assert pointers(found, installed=["org.example.player"]) == []
    assert entries_for(["org.mpris.MediaPlayer2.vlc"], [player], bus="system") == {}


def test_docs_library_md_is_the_table_of_the_bundled_entries() -> None:
    """After adding or changing an entry: aai-gateway library --table > docs/library.md"""
    written = (ROOT / "docs" / "library.md").read_text("utf-8")
    assert written == markdown(bundled().entries), "docs/library.md is stale: run aai-gateway library --table"
    assert "| Session message bus | `org.freedesktop.dbus` | run |" in written


def test_serving_imports_nothing_of_the_library() -> None:
    """`--mcp` and `--web` import the command line and the serving layers; the library waits for its commands."""
    code = (
        "import sys, aai_gateway.cli, aai_gateway.mcp.stdio, aai_gateway.http_server\n"
        "print(sorted(m for m in sys.modules if m.startswith('aai_gateway.library') or m == 'dbus_fast'))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "[]"

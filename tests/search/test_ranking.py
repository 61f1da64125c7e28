"""The search core over values: analysis, BM25F, fusion, folding and "nothing fits"."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aai_gateway.descriptor import Name
from aai_gateway.library.entries import Entry, bundled
from aai_gateway.search.analysis import fold, split_identifier, tokens
from aai_gateway.search.documents import Operation
from aai_gateway.search.index import SearchIndex
from aai_gateway.search.sources import library


def op(app: str, tool: str, description: str = "", **more: Any) -> Operation:
    return Operation(
        app_id=app,
        app_name=app.rsplit(".", 1)[-1],
        tool=tool,
        description=description,
        parameters=more.pop("parameters", {}),
        **more,
    )


@pytest.mark.parametrize(
    ("text", "identifier", "expected"),
    [
        ("setVolume", True, [{"set"}, {"volume", "volum"}]),
        ("list_players", True, [{"list"}, {"players", "player", "play"}]),
        ("HTTPServer", True, [{"http"}, {"server"}]),
        ("Bibliothèque", False, [{"bibliotheque", "bibliothequ"}]),
        ("电池还剩多少", False, [{"电池"}, {"池还"}, {"还剩"}, {"剩多"}, {"多少"}]),
        ("音", False, [{"音"}]),
        ("42 pages", False, [{"pages", "page", "pag"}]),
        ("don't stop", False, [{"not"}, {"stop"}]),
        ("I can\u2019t, it won't", False, [{"not"}, {"not"}]),
        ("how's the weather? I'm out, you'll see", False, [{"weather"}, {"out"}, {"see"}]),
        ("l'écran", False, [{"ecran"}]),
    ],
)
def test_tokens(text: str, identifier: bool, expected: list[set[str]]) -> None:
    got = [set(t) for t in tokens(text, identifier=identifier)]
    assert [e <= g for e, g in zip(expected, got, strict=True)] == [True] * len(expected), got


def test_folding_and_identifiers() -> None:
    assert fold("LAUTSTÄRKE") == "lautstarke"
    assert split_identifier("getMPRISPlayerName") == "get MPRIS Player Name"


@given(st.text(max_size=300))
def test_any_text_is_analysed_without_error(text: str) -> None:
    for token in tokens(text, identifier=True):
        assert token
        assert all(term for term in token)


def test_a_huge_text_is_cut() -> None:
    assert len(tokens("word " * 100_000)) == 4000


CATALOGUE = [
    op(
        "org.mpris.mediaplayer2",
        "pause",
        "Pause playback, keeping the position.",
        aliases=["music", "Musik"],
        tool_aliases=["anhalten"],
    ),
    op("org.mpris.mediaplayer2", "play", "Start or resume playback.", aliases=["music", "Musik"]),
    op("org.mpris.mediaplayer2", "set_volume", "Set the player's volume, 0.0 to 1.0.", tool_aliases=["Lautstärke"]),
    op("org.freedesktop.upower", "battery_level", "How full the battery is, in percent.", tool_aliases=["电池电量"]),
    op("org.dunstproject.dunst", "set_do_not_disturb", "Turn do-not-disturb on or off."),
    op(
        "org.example.weather",
        "get_current_weather",
        "Weather now at a place.",
        parameters={"properties": {"unit": {"enum": ["celsius", "fahrenheit"]}}},
    ),
    op("org.other.weather", "get_current_weather", "Current weather for a city."),
]


@pytest.mark.parametrize(
    ("query", "app", "tool"),
    [
        ("pause the music", "org.mpris.mediaplayer2", "pause"),
        ("Musik anhalten", "org.mpris.mediaplayer2", "pause"),
        ("lautstärke", "org.mpris.mediaplayer2", "set_volume"),
        ("电池电量还有多少", "org.freedesktop.upower", "battery_level"),
        ("turn on do not disturb", "org.dunstproject.dunst", "set_do_not_disturb"),
        ("weather in fahrenheit", "org.example.weather", "get_current_weather"),
    ],
)
def test_the_right_operation_first(query: str, app: str, tool: str) -> None:
    found = SearchIndex(CATALOGUE).search(query)
    assert found.fits
    assert (found.hits[0].operation.app_id, found.hits[0].operation.tool) == (app, tool)


def test_words_side_by_side_count_more_than_apart() -> None:
    index = SearchIndex(
        [
            op("org.a.app", "report", "The weather report, current to the hour."),
            op("org.b.app", "report", "The current weather, reported to the hour."),
        ]
    )
    assert index.search("current weather").hits[0].operation.app_id == "org.b.app"


def test_a_library_tool_asked_by_its_own_name_comes_first() -> None:
    """Typing a tool's name as words ("set wifi enabled", "play pause") finds that tool, not a neighbour
    that has the same words in another order or apart."""
    operations = library(bundled().entries, set())
    index = SearchIndex(operations)
    first = sum(
        (hits := index.search(o.tool.replace("_", " ")).hits) != () and hits[0].operation.tool == o.tool
        for o in operations
    )
    assert first / len(operations) >= 0.85, f"{first} of {len(operations)}"


def test_same_named_tools_fold_into_the_best() -> None:
    hits = SearchIndex(CATALOGUE).search("current weather", limit=5).hits
    assert [h.operation.tool for h in hits].count("get_current_weather") == 1
    assert hits[0].also_in in (("org.example.weather",), ("org.other.weather",))


def test_nothing_fits_a_request_no_operation_serves() -> None:
    found = SearchIndex(CATALOGUE).search("book a flight to Lisbon")
    assert not found.fits
    assert found.hits == ()
    assert not SearchIndex([]).search("anything").fits


def test_ties_go_to_what_ran_before() -> None:
    twins = [op("org.a.app", "sync_files", "Sync the files."), op("org.b.app", "syncFiles", "Sync the files.")]
    index = SearchIndex(twins)
    plain = index.search("sync files").hits
    assert plain[0].score == plain[1].score
    assert plain[0].operation.app_id == "org.a.app"
    favoured = index.search("sync files", successes={("org.b.app", "syncFiles"): 3}).hits
    assert favoured[0].operation.app_id == "org.b.app"


@given(st.lists(st.text(max_size=40), max_size=8), st.text(max_size=80))
def test_hostile_names_and_queries_never_break_search(names: list[str], query: str) -> None:
    ops = [op("org.x.app", name or "t", name) for name in names]
    found = SearchIndex(ops).search(query, limit=3)
    assert len(found.hits) <= 3


def test_a_store_entry_known_only_by_its_index_is_searched_by_its_tool_names() -> None:
    entry = Entry(
        app_id="com.example.notes",
        names=(Name("Notes", "en"),),
        description="Take notes",
        version="1.0.0",
        source="https://store.example/index.json",
        aliases=("memo",),
        tools=("add_note", "list_notes"),
    )
    found = SearchIndex(library([entry], set())).search("add a note")
    assert found.fits
    hit = found.hits[0].operation
    assert (hit.app_id, hit.tool, hit.source, hit.installed) == (
        "com.example.notes",
        "add_note",
        "https://store.example/index.json",
        False,
    )
    assert hit.parameters == {}

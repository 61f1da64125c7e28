"""The SVG plots: well-formed XML, every number in a title or label, a pattern and a legend entry per series,
hostile names escaped, nothing a strict CSP would block."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

from aai_gateway.web.plots import COLOURS, Row, Series, bars, counted, stacked_columns

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


def parsed(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # noqa: S314 - our own output
    assert root.tag == f"{SVG}svg"
    assert root.get("viewBox", "").startswith("0 0 400 ")
    for element in root.iter():
        assert element.get("style") is None
        assert not element.tag.endswith("script")
        assert not any(name.startswith("on") for name in element.attrib)
    return root


def titles(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}title")]


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_stacked_columns_carry_each_count_in_a_title_and_a_legend_per_app() -> None:
    labels = ["2026-11-20", "2026-11-21", "2026-11-22"]
    svg = stacked_columns(
        "usage", "Calls per day", labels, [Series("dev.aai.echo", [3, 0, 12]), Series("io.mpv", [1, 4, 0])], "calls"
    )
    root = parsed(svg)
    assert titles(root) == [
        "Calls per day",
        "dev.aai.echo, 2026-11-20: 3 calls",
        "io.mpv, 2026-11-20: 1 call",
        "io.mpv, 2026-11-21: 4 calls",
        "dev.aai.echo, 2026-11-22: 12 calls",
    ]
    patterns = [p.get("id") for p in root.iter(f"{SVG}pattern")]
    assert patterns == ["usage-0", "usage-1"]
    fills = {r.get("fill") for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None}
    assert fills == {"url(#usage-0)", "url(#usage-1)"}
    assert {"dev.aai.echo", "io.mpv", "11-20", "20"} <= set(texts(root))  # legend, axis labels, the scale's top


def test_bars_write_each_value_beside_its_bar_and_name_both_series() -> None:
    rows = [Row("dev.aai.echo:echo", [1.5, 9.25], ["p50 1.5 ms", "p95 9.2 ms"]), Row("b:y", [3, 4], ["p50 3", "p95 4"])]
    root = parsed(bars("durations", "Durations", rows, ["p50", "p95"]))
    assert {"dev.aai.echo:echo", "p50 1.5 ms", "p95 9.2 ms", "b:y", "p50 3", "p95 4", "p50", "p95"} <= set(texts(root))
    assert "dev.aai.echo:echo, p95: p95 9.2 ms" in titles(root)
    widths = [float(r.get("width", "0")) for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert widths[1] == max(widths)  # 9.25 is the longest bar


def test_hostile_names_are_text_and_an_empty_plot_says_so() -> None:
    root = parsed(bars("callers", HOSTILE, [Row(HOSTILE, [2], ["2 calls"])], ["calls"]))
    assert HOSTILE in titles(root)
    assert HOSTILE in texts(root)
    empty = parsed(stacked_columns("none", "Calls", ["2026-11-20"], [], "calls"))
    assert "No calls in this range" in texts(empty)
    assert "No calls in this range" in texts(parsed(bars("none", "Callers", [], ["calls"])))


def test_more_series_than_colours_still_look_different() -> None:
    series = [Series(f"app{i}", [i + 1]) for i in range(3 * len(COLOURS))]
    root = parsed(stacked_columns("many", "Calls", ["2026-11-20"], series, "calls"))
    looks = set()
    for pattern in root.iter(f"{SVG}pattern"):
        del pattern.attrib["id"]
        looks.add(ET.tostring(pattern))
    assert len(looks) == len(series)
    assert "app23" in texts(root)


LONG_IDS = [
    "org.freedesktop.portal.desktop",
    "com.transmissionbt.transmission",
    "org.gnome.settingsdaemon.rfkill",
    "org.mpris.mediaplayer2",
    "dev.aai.echo",
    "org.gnome.shell.screencast",
]


def test_the_legend_shows_long_app_ids_whole_and_draws_no_swatch_over_a_name() -> None:
    series = [Series(name, [1, 2]) for name in LONG_IDS]
    root = parsed(stacked_columns("usage", "Calls per day", ["2026-11-20", "2026-11-21"], series, "calls"))
    legend = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "legend")
    entries = []
    for entry in legend.findall(f"{SVG}g"):
        swatch, text = entry.find(f"{SVG}rect"), entry.find(f"{SVG}text")
        assert swatch is not None
        assert text is not None
        entries.append((float(swatch.get("x", "0")), float(swatch.get("y", "0")), text.text or ""))
    assert [name for _, _, name in entries] == LONG_IDS  # every id whole, none cut
    for (x, y, name), (next_x, next_y, _) in itertools.pairwise(entries):
        if next_y == y:  # on one line, the next swatch starts after this name ends (a generous width per character)
            assert next_x >= x + 14 + len(name) * 12 * 0.6, (name, x, next_x)
    for x, _, name in entries:
        assert x + 14 + len(name) * 12 * 0.6 <= 400


def test_a_name_longer_than_a_line_is_cut_and_kept_whole_in_a_title() -> None:
    name = "org.example." + "very-long-segment." * 6 + "app"
    root = parsed(stacked_columns("usage", "Calls", ["2026-11-20"], [Series(name, [1])], "calls"))
    legend = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "legend")
    shown = next(legend.iter(f"{SVG}text")).text or ""
    assert shown.endswith("…")
    assert name.startswith(shown[:-1])
    assert [t.text for t in legend.iter(f"{SVG}title")] == [name]


def test_one_call_is_one_call() -> None:
    assert counted(1, "calls") == "1 call"
    assert counted(2, "calls") == "2 calls"
    assert counted(0, "calls") == "0 calls"
    assert counted(1.5, "calls") == "1.5 calls"

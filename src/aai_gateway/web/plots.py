"""Plots as inline SVG, drawn on the server: stacked columns over time and horizontal bars.

Nothing is fetched and nothing needs a script or a style attribute (the UI's CSP allows neither): colours
are SVG presentation attributes. Each series has a colour and a pattern of its own, and a legend names
it, so no plot is read by colour alone; each bar carries a `<title>` with its numbers (shown on hover),
and the page puts the same numbers in a table under the plot. The viewBox scales the drawing to the
width of the page (CSS `svg.plot { width: 100% }`), a laptop's or a phone's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 400
FONT = 12
LABEL_H = 15
BAR_H = 10
CHAR_W = FONT * 0.62
"""A generous width of one character of the UI's sans-serif font at FONT: legend names are placed by it."""
SWATCH = 14
LEGEND_GAP = 12
COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#8a7a00", "#404040")
"""Okabe and Ito's palette, told apart by people with any common colour blindness; its yellow darkened."""
PATTERNS = (
    "",
    '<path d="M0 6 L6 0" stroke="#fff" stroke-width="1.5"/>',
    '<circle cx="3" cy="3" r="1.2" fill="#fff"/>',
    '<path d="M0 3 H6" stroke="#fff" stroke-width="1.5"/>',
    '<path d="M0 0 L6 6 M0 6 L6 0" stroke="#fff" stroke-width="1"/>',
    '<path d="M3 0 V6" stroke="#fff" stroke-width="1.5"/>',
    '<path d="M0 0 L6 6" stroke="#fff" stroke-width="1.5"/>',
    '<rect x="2" y="2" width="2" height="2" fill="#fff"/>',
)


@dataclass(frozen=True, slots=True)
class Series:
    """One named set of values, drawn in one colour and pattern."""

    name: str
    values: Sequence[float]


@dataclass(frozen=True, slots=True)
class Row:
    """One group of horizontal bars: its label, a value per series and the text shown for each."""

    label: str
    values: Sequence[float]
    texts: Sequence[str]


def stacked_columns(plot_id: str, title: str, labels: Sequence[str], series: Sequence[Series], unit: str) -> str:
    """A column per label (a day, an hour), each series stacked in it; every 1 in n labels written under it."""
    top, left, bottom = 8, 34, 30
    legend_h = _legend_height(series)
    plot_h = 150
    height = top + plot_h + bottom + legend_h
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    peak = _nice(max(totals, default=0))
    parts = [_open(plot_id, title, height), _defs(plot_id, len(series))]
    if not labels or peak == 0:
        parts.append(_nothing(height))
        return "".join([*parts, "</svg>"])
    inner = WIDTH - left - 4
    step = inner / len(labels)
    bar = max(1.0, step * 0.8)
    for tick in (0, peak / 2, peak):
        y = top + plot_h - plot_h * tick / peak
        parts.append(f'<line x1="{left}" x2="{WIDTH - 4}" y1="{y:.1f}" y2="{y:.1f}" stroke="#d9dee7"/>')
        parts.append(_text(left - 4, y + 4, _number(tick), anchor="end"))
    every = max(1, round(len(labels) / 6))
    for i, label in enumerate(labels):
        x = left + i * step + (step - bar) / 2
        y = top + plot_h
        for k, s in enumerate(series):
            value = s.values[i]
            if value <= 0:
                continue
            h = plot_h * value / peak
            y -= h
            tip = f"{s.name}, {label}: {counted(value, unit)}"
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="url(#{plot_id}-{k})" '
                f'stroke="#fff" stroke-width="0.5"><title>{escape(tip)}</title></rect>'
            )
        if i % every == 0:
            parts.append(_text(x + bar / 2, top + plot_h + 14, _short(label), anchor="middle"))
    parts.append(_legend(plot_id, series, top + plot_h + bottom))
    return "".join([*parts, "</svg>"])


def bars(plot_id: str, title: str, rows: Sequence[Row], series: Sequence[str], maximum: float | None = None) -> str:
    """Horizontal bars: per row its label on a line, then a bar per series with its text at the end."""
    legend_h = _legend_height([Series(name, ()) for name in series]) if len(series) > 1 else 0
    row_h = LABEL_H + 2 + (BAR_H + 2) * len(series) + 6  # as the loop below steps down
    height = 8 + row_h * len(rows) + legend_h + 4
    parts = [_open(plot_id, title, max(height, 40)), _defs(plot_id, len(series))]
    if not rows:
        parts.append(_nothing(40))
        return "".join([*parts, "</svg>"])
    peak = maximum if maximum is not None else max((v for r in rows for v in r.values), default=0)
    room = WIDTH - 4 - 120  # the rest of the line holds the text at the end of the bar
    y = 8.0
    for row in rows:
        parts.append(_text(4, y + FONT, row.label))
        y += LABEL_H + 2
        for k, (value, text) in enumerate(zip(row.values, row.texts, strict=True)):
            w = room * value / peak if peak > 0 else 0
            tip = f"{row.label}: {text}" if len(series) == 1 else f"{row.label}, {series[k]}: {text}"
            parts.append(
                f'<rect x="4" y="{y:.1f}" width="{max(w, 1):.1f}" height="{BAR_H}" fill="url(#{plot_id}-{k})">'
                f"<title>{escape(tip)}</title></rect>"
            )
            parts.append(_text(4 + max(w, 1) + 4, y + BAR_H - 1, text))
            y += BAR_H + 2
        y += 6
    if len(series) > 1:
        parts.append(_legend(plot_id, [Series(name, ()) for name in series], y))
    return "".join([*parts, "</svg>"])


def _open(plot_id: str, title: str, height: float) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" id="{escape(plot_id)}" viewBox="0 0 {WIDTH} '
        f'{height:.0f}" role="img" aria-labelledby="{escape(plot_id)}-title" font-family="system-ui, sans-serif" '
        f'font-size="{FONT}"><title id="{escape(plot_id)}-title">{escape(title)}</title>'
    )


def _defs(plot_id: str, count: int) -> str:
    patterns = []
    for k in range(count):
        # past the eighth series the patterns shift against the colours: 64 series look different
        colour, marks = COLOURS[k % len(COLOURS)], PATTERNS[(k + k // len(COLOURS)) % len(PATTERNS)]
        patterns.append(
            f'<pattern id="{escape(plot_id)}-{k}" width="6" height="6" patternUnits="userSpaceOnUse">'
            f'<rect width="6" height="6" fill="{colour}"/>{marks}</pattern>'
        )
    return f"<defs>{''.join(patterns)}</defs>"


def _legend_places(series: Sequence[Series]) -> list[tuple[float, int, str]]:
    """Each legend entry's x, line and shown name: entries side by side as wide as their names, on as many
    lines as they need, so no name is cut short while it fits a line and no swatch is drawn over a name."""
    places = []
    x, line = 4.0, 0
    longest = int((WIDTH - 8 - SWATCH) / CHAR_W)
    for s in series:
        shown = _cut(s.name, longest)
        width = SWATCH + len(shown) * CHAR_W + LEGEND_GAP
        if x > 4 and x + width - LEGEND_GAP > WIDTH - 4:
            x, line = 4.0, line + 1
        places.append((x, line, shown))
        x += width
    return places


def _legend_height(series: Sequence[Series]) -> int:
    lines = max((line for _, line, _ in _legend_places(series)), default=-1) + 1
    return LABEL_H * lines + 4


def _legend(plot_id: str, series: Sequence[Series], top: float) -> str:
    parts = []
    for k, (s, (x, line, shown)) in enumerate(zip(series, _legend_places(series), strict=True)):
        y = top + line * LABEL_H
        whole = f"<title>{escape(s.name)}</title>" if shown != s.name else ""
        parts.append(
            f'<g>{whole}<rect x="{x:.1f}" y="{y + 2:.1f}" width="10" height="10" fill="url(#{plot_id}-{k})"/>'
            f"{_text(x + SWATCH, y + 11, shown)}</g>"
        )
    return f'<g class="legend">{"".join(parts)}</g>'


def _nothing(height: float) -> str:
    return _text(WIDTH / 2, height / 2, "No calls in this range", anchor="middle")


def _text(x: float, y: float, text: str, anchor: str = "start") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="#1d2330">{escape(text)}</text>'


def _nice(value: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten at or above `value`: the top of a column plot's scale."""
    if value <= 0:
        return 0
    scale = 1.0
    while scale * 10 <= value:
        scale *= 10
    for factor in (1, 2, 5, 10):
        if factor * scale >= value:
            return factor * scale
    return 10 * scale


def counted(value: float, noun: str) -> str:
    """`1 call`, `2 calls`, `1.5 calls`: a number and its noun (given in the plural), agreeing."""
    return f"{_number(value)} {noun[:-1] if value == 1 and noun.endswith('s') else noun}"


def _number(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def _short(label: str) -> str:
    """2026-11-24 → 11-24, 2026-11-24T08 → 08h: the axis has room for little."""
    return f"{label[11:13]}h" if len(label) > 10 else label[5:]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"

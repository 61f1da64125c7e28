"""The store's showcase: static HTML pages beside `index.json`, for people choosing what to install.

`index.html` lists the entries by category; `apps/<appId>/index.html` shows one entry: its names, what it
does, its tools with their annotations and parameters, how it was verified, and the install command.
The pages hold no script at all (a Content-Security-Policy meta forbids any), escape everything they
show, and link only to each other, the descriptors and the index, so they can be served as they are.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, PackageLoader

from aai_gateway import paths
from aai_gateway.descriptor.parameters import signature_text
from aai_gateway.library.entries import OTHER, Entry, names_json

CSP = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'"
STYLE = "showcase.css"
LEVELS = {
    "run": "the test suite ran the real app and checked each tool's effect",
    "interface": "every method and property used was checked against the app's own interface description",
}
MARKS = (("read_only", "read-only"), ("destructive", "destructive"), ("idempotent", "idempotent"))


@dataclass(frozen=True, slots=True)
class ToolView:
    name: str
    description: str
    marks: tuple[str, ...]
    parameters: str


def templates() -> Environment:
    return Environment(loader=PackageLoader("aai_gateway.library", "showcase"), autoescape=True, auto_reload=False)


def tool_views(entry: Entry) -> list[ToolView]:
    """The entry's tools (every platform's, each name once) as the page shows them."""
    if entry.descriptor is None:
        return [ToolView(name, "", (), "listed by the store") for name in entry.tools]
    seen: dict[str, ToolView] = {}
    for binding in entry.descriptor.bindings.values():
        for tool in binding.tools:
            if tool.name in seen:
                continue
            hints = tool.annotations
            marks = [word for name, word in MARKS if getattr(hints, name) is True]
            if hints.open_world is True:
                marks.append("open world")
            seen[tool.name] = ToolView(tool.name, tool.description, tuple(marks), signature_text(tool.parameters))
    return list(seen.values())


def categories(entries: Iterable[Entry]) -> list[tuple[str, list[Entry]]]:
    """Entries by category, categories by name with Other last, entries by name."""
    found: dict[str, list[Entry]] = {}
    for entry in sorted(entries, key=lambda e: (e.name.casefold(), e.app_id)):
        found.setdefault(entry.category, []).append(entry)
    return sorted(found.items(), key=lambda pair: (pair[0] == OTHER, pair[0]))


def write(entries: Iterable[Entry], folder: Path, store: str) -> list[Path]:
    """Write the showcase into `folder` (beside index.json); returns the pages written."""
    env = templates()
    listed = list(entries)
    common = {"store": store, "csp": CSP}
    pages = [folder / "index.html"]
    index = env.get_template("index.html").render(root="", entries=listed, categories=categories(listed), **common)
    paths.write_atomic(pages[0], index.encode())
    entry_page = env.get_template("entry.html")
    for entry in listed:
        page = folder / "apps" / entry.app_id / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        html = entry_page.render(
            root="../../",
            entry=entry,
            names=list(names_json(entry.names).items()),
            tools=tool_views(entry),
            levels=LEVELS,
            **common,
        )
        paths.write_atomic(page, html.encode())
        pages.append(page)
    style = env.loader.get_source(env, STYLE)[0] if env.loader else ""
    paths.write_atomic(folder / STYLE, style.encode())
    return pages

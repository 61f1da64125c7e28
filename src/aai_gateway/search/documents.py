"""An operation as search knows it: one tool of one app, wherever the app comes from.

Sources (installed apps, MCP servers' last tool lists, the library, stores) turn what they hold into
`Operation`s; the index reads their texts by field, and a search result carries the rest back.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aai_gateway.search.analysis import Token, tokens
from aai_gateway.search.ranking import Analysed

MAX_PARAMETERS = 64
"""Parameters of one tool whose names and texts are indexed."""
MAX_VALUES = 64
"""Allowed values (`enum`) of one parameter that are indexed."""


@dataclass(frozen=True, slots=True)
class Operation:
    app_id: str
    app_name: str
    tool: str
    description: str
    parameters: Mapping[str, Any]
    annotations: Mapping[str, bool] = field(default_factory=dict)
    source: str = "installed"
    """"installed", "library", or the URL of the store an entry comes from."""
    installed: bool = True
    runnable: bool = True
    why_not: str = ""
    """Why it cannot run here, in one short phrase, when `runnable` is false."""
    app_names: Sequence[str] = ()
    """Every name of the app, in every language it gives."""
    aliases: Sequence[str] = ()
    tool_aliases: Sequence[str] = ()
    app_description: str = ""
    context: str = ""
    """More text about the app that people search by (a library entry's reason for being)."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.app_id, self.tool)

    def analysed(self) -> Analysed:
        app_words = [*self.app_names, *self.aliases]
        return {
            "tool": [tokens(self.tool, identifier=True), *_each(self.tool_aliases)],
            "app": [*_each(app_words), tokens(self.app_id, identifier=True)],
            "text": [tokens(self.description)],
            "params": [tokens(name, identifier=True) for name in _parameter_names(self.parameters)],
            "param_text": _each(_parameter_texts(self.parameters)),
            "context": [tokens(self.app_description), tokens(self.context)],
        }

    def semantic_text(self) -> str:
        """What the semantic signal reads: the tool's name as words, then its description and the app's names."""
        words = self.tool.replace("_", " ").replace(".", " ")
        return f"{words}. {self.description} ({self.app_name})"


def _each(texts: Sequence[str]) -> list[list[Token]]:
    return [tokens(text) for text in texts]


def _properties(schema: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping):
        yield from list(properties.items())[:MAX_PARAMETERS]


def _parameter_names(schema: Mapping[str, Any]) -> list[str]:
    return [str(name) for name, _ in _properties(schema)]


def _parameter_texts(schema: Mapping[str, Any]) -> list[str]:
    texts: list[str] = []
    for _, spec in _properties(schema):
        if not isinstance(spec, Mapping):
            continue
        for key in ("title", "description"):
            if isinstance(spec.get(key), str):
                texts.append(spec[key])
        items = spec.get("items")
        for values in (spec.get("enum"), items.get("enum") if isinstance(items, Mapping) else None):
            if isinstance(values, list):
                texts.extend(str(v) for v in values[:MAX_VALUES] if isinstance(v, str | int | float))
    return texts

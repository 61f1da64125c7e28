"""The descriptions of a generated descriptor, in order: the library's, the interface's own, the model's.

Every generator marks where each tool's description came from (the interface's text or its own plain
sentence); `describe` then applies the bundled library (`knowledge`), and with `use_llm` the LLM
pass (`llm`), whose refusal leaves the descriptor as it was and says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aai_gateway.authoring import knowledge, llm
from aai_gateway.authoring.knowledge import Entry, Source
from aai_gateway.config import Settings


class NoModel(ValueError):
    """--llm without an `llm` section in config.json."""


@dataclass
class Described:
    document: dict[str, Any]
    sources: dict[str, Source]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return knowledge.summary(self.sources)


async def describe(
    document: dict[str, Any],
    sources: Mapping[str, Source],
    settings: Settings,
    *,
    use_llm: bool = False,
    library: Sequence[Entry] | None = None,
) -> Described:
    """`document` with the library's knowledge and, with `use_llm`, the model's names and texts."""
    model = settings.llm
    if use_llm and model is None:
        raise NoModel(
            '--llm needs an OpenAI-compatible endpoint in config.json: "llm": {"baseUrl": "https://…/v1", '
            '"model": "…", "apiKey": {"$env": "VARIABLE"}}'
        )
    applied = knowledge.apply(document, sources, knowledge.bundled() if library is None else library)
    described = Described(applied.document, applied.sources, list(applied.notes))
    if applied.app is not None:
        described.notes.append(f"the app's names, aliases and description come from the library entry {applied.app}")
    if use_llm and model is not None:
        outcome = await llm.improve(model, settings, described.document, described.sources, app_fixed=bool(applied.app))
        if outcome.warning is not None:
            described.warnings.append(f"the LLM pass is not used: {outcome.warning}; the descriptor is as generated")
        else:
            described.document, described.sources = outcome.document, outcome.sources
            described.notes.append(f"the model rewrote {len(outcome.changed)} tools")
    return described

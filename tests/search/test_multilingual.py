"""Requests worded as people ask them, in five languages, against the bundled library.

`requests.json` was written from what a person would say, before looking at what the ranking answers;
each names the library tools that serve it. The index is lexical only (no semantic model), so what is
measured is the words: tool names, descriptions, and the aliases the library gives in other languages.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.library import entries
from aai_gateway.search import sources
from aai_gateway.search.index import Hit, SearchIndex
from tests.e2e.mcp_client import stdio_session, text_of
from tests.support import gateway_command

REQUESTS: list[dict[str, Any]] = json.loads((Path(__file__).parent / "requests.json").read_text(encoding="utf-8"))
LANGUAGES = ("en", "de", "fr", "es", "zh")
TOP = 5
IN_TOP = 0.95
APP_FIRST = 0.90


@cache
def library_index() -> SearchIndex:
    return SearchIndex(sources.library(entries.bundled().entries, set()))


def expected(request: dict[str, Any]) -> set[tuple[str, str]]:
    return {(e["app"], e["tool"]) for e in request["expect"]}


def served(hit: Hit) -> set[tuple[str, str]]:
    """The operations one hit stands for: its own and those of the same name it folded in."""
    op = hit.operation
    return {(op.app_id, op.tool), *((app, op.tool) for app in hit.also_in)}


def shown(hits: tuple[Hit, ...]) -> str:
    return ", ".join(f"{h.operation.app_id}/{h.operation.tool}" for h in hits) or "nothing fits"


def test_the_set_is_broad_enough() -> None:
    per_language: dict[str, int] = defaultdict(int)
    for request in REQUESTS:
        per_language[request["lang"]] += 1
    assert all(per_language[lang] >= 20 for lang in LANGUAGES), per_language
    apps = {app for r in REQUESTS for app, _ in expected(r)}
    assert len(apps) >= 30, sorted(apps)


def test_people_find_the_tool_in_their_own_language() -> None:
    index = library_index()
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    misses: list[str] = []
    for request in REQUESTS:
        want = expected(request)
        hits = index.search(request["query"], limit=TOP).hits
        in_top = any(want & served(hit) for hit in hits)
        app_first = bool(hits) and hits[0].operation.app_id in {app for app, _ in want}
        for key in (request["lang"], "all"):
            found[key][0] += 1
            found[key][1] += in_top
            found[key][2] += app_first
        if not (in_top and app_first):
            lacking = "tool not in top 5" if not in_top else "app not first"
            misses.append(f"[{request['lang']}] {request['query']!r}: {lacking}; got {shown(hits)}")
    print()
    for key in (*LANGUAGES, "all"):
        total, top, first = found[key]
        print(f"{key:>3}: {total:3} requests, top {TOP} {top / total:6.1%}, app first {first / total:6.1%}")
    print("\n".join(misses))
    total, top, first = found["all"]
    assert top / total >= IN_TOP, "\n".join(misses)
    assert first / total >= APP_FIRST, "\n".join(misses)


THROUGH_THE_GATEWAY = {
    "en": ("how much battery do I have left?", "take a screenshot", "turn off wifi"),
    "de": ("Musik anhalten", "Lautstärke", "Bildschirm sperren"),
    "fr": ("mets la musique en pause", "fais une capture d'écran", "éteindre l'ordinateur"),
    "es": ("pausa la música", "apagar el wifi", "montar el pendrive"),
    "zh": ("电池还剩多少", "暂停音乐", "关闭蓝牙"),
}


@pytest.mark.anyio
async def test_aai_search_answers_in_every_language(tmp_path: Path) -> None:
    """The agent's `aai_search`, through the installed gateway over stdio, with nothing installed."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"}
    by_query = {r["query"]: r for r in REQUESTS}
    async with stdio_session(env, tmp_path / "gateway.log") as session:
        for lang, queries in THROUGH_THE_GATEWAY.items():
            for query in queries:
                result = await session.call_tool("aai_search", {"query": query, "limit": TOP})
                text = text_of(result)
                content = result.structured_content or {}
                assert content.get("fits"), f"[{lang}] {query!r}: {text}"
                got = {(r["app"]["id"], r["tool"]) for r in content["results"]}
                got |= {(app, r["tool"]) for r in content["results"] for app in r.get("alsoIn", ())}
                assert expected(by_query[query]) & got, f"[{lang}] {query!r}: {text}"


@pytest.mark.parametrize(
    ("words", "app"),
    [
        ("lautstärke", "org.mpris.mediaplayer2"),
        ("Musik anhalten", "org.mpris.mediaplayer2"),
        ("pausar", "org.mpris.mediaplayer2"),
        ("verrouiller", "org.freedesktop.login1"),
        ("暂停", "org.mpris.mediaplayer2"),
    ],
)
def test_library_word_finds_entries_by_their_tools_aliases(tmp_path: Path, words: str, app: str) -> None:
    """`aai-gateway library WORD...` matches a tool's aliases as it matches its name."""
    assert app in library_ids(tmp_path, words)


@pytest.mark.parametrize(
    ("words", "app"),
    [
        # "don't" is "do not": the "not" of do-not-disturb, not a "don" and a "t" that meet other words.
        ("don't disturb me for the next hour", "org.dunstproject.dunst"),
        # Words side by side as the tool's name has them ("close_notification", "network_state") say more than
        # the same words apart.
        ("close notification", "org.freedesktop.notifications"),
        ("network state", "org.freedesktop.networkmanager"),
    ],
)
def test_library_word_ranks_the_entry_meant_first(tmp_path: Path, words: str, app: str) -> None:
    assert library_ids(tmp_path, words)[:1] == [app]


def library_ids(home: Path, words: str) -> list[str]:
    """The entries `aai-gateway library --json WORD...` lists, best first."""
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"}
    command = [gateway_command(), "library", "--json", *words.split()]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return [row["id"] for row in json.loads(done.stdout)]

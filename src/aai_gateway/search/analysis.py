"""Text to search terms: the same steps for what is indexed and for what is asked.

Text is folded (case and accents), identifiers are split (`setVolume`, `list_players`, `org.mpris`),
and each word is stemmed by the Snowball stemmers of the languages the library's names and aliases are
written in: a word counts as its stem in any of them, so "players", "Lautstärke" and "musiques" meet their
stems whatever language the query is in. Chinese, Japanese and Korean are written without spaces:
their runs are cut into overlapping two-character pieces (bigrams), which match without a dictionary.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

LANGUAGES = ("english", "german", "french", "spanish")
"""Snowball stemmers applied to every word: the languages library entries give names and aliases in."""

MAX_TEXT = 20_000
"""Characters of one text that are analysed; the rest of a longer text is ignored."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_STEMMERS = tuple(Stemmer.Stemmer(language) for language in LANGUAGES)

Token = frozenset[str]
"""One word of a text as the terms it may match: its folded form and its stems."""


def fold(text: str) -> str:
    """Lowercase without accents: `Bibliothèque` and `bibliotheque` are one word."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def split_identifier(text: str) -> str:
    """`setVolume` → `set Volume`, `HTTPServer` → `HTTP Server`; `_`, `.` and `-` part words anyway."""
    return _CAMEL.sub(" ", text)


def tokens(text: str, *, identifier: bool = False) -> list[Token]:
    """The words of `text`, each as the set of terms it matches (see the module's description)."""
    text = text[:MAX_TEXT]
    if identifier:
        text = split_identifier(text)
    found: list[Token] = []
    for word in _WORD.findall(fold(text)):
        if _CJK.search(word):
            found.extend(frozenset({piece}) for piece in _cjk_pieces(word))
        elif not word.isdigit():
            found.append(_stems(word))
    return found


def _cjk_pieces(word: str) -> list[str]:
    """A word holding CJK runs: each run as its bigrams (a one-character run as itself); other letters whole."""
    pieces: list[str] = []
    at = 0
    for run in _CJK.finditer(word):
        if run.start() > at:
            pieces.append(word[at : run.start()])
        chars = run.group()
        pieces.extend([chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)])
        at = run.end()
    if at < len(word):
        pieces.append(word[at:])
    return pieces


@lru_cache(maxsize=65_536)
def _stems(word: str) -> Token:
    return frozenset({word, *(stemmer.stemWord(word) for stemmer in _STEMMERS)})

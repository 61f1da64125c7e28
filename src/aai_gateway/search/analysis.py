"""Text to search terms: the same steps for what is indexed and for what is asked.

Text is folded (case and accents), identifiers are split (`setVolume`, `list_players`, `org.mpris`),
English contractions are undone ("don't" is "do not", the "'s" of "how's" goes), and each word is
stemmed by the Snowball stemmers of the languages the library's names and aliases are written in: a word
counts as its stem in any of them, so "players", "Lautstärke" and "musiques" meet their stems whatever
language the query is in. Chinese, Japanese and Korean are written without spaces:
their runs are cut into overlapping two-character pieces (bigrams), which match without a dictionary.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise

import Stemmer

LANGUAGES = ("english", "german", "french", "spanish")
"""Snowball stemmers applied to every word: the languages library entries give names and aliases in."""

MAX_TEXT = 20_000
"""Characters of one text that are analysed; the rest of a longer text is ignored."""

STOP_WORDS = frozenset(
    # English, German, French and Spanish words that carry no meaning of their own: articles, pronouns,
    # prepositions, auxiliaries and politeness. Words that decide what is meant stay ("on", "off", "not").
    """
    a an the this that these those it its my me i you your we our us he she they them his her their
    to of in at for from with by as into about and or but if so than then there here
    is are was were be been am do does did can could would will shall should may might must
    please pls just some any what which who whom whose how when where why also too very
    der die das den dem des ein eine einen einem einer eines und oder ich du er sie es wir ihr mein meine
    mir mich dir dich bitte ist sind war bin kann kannst könnte würde wird zu zum zur im am vom von mit
    für auf aus bei nach über wie was wer wo wann warum noch mal doch
    le la les l un une des du de d et ou je tu il elle nous vous ils elles me moi te toi mon ma mes
    ce cet cette ces est sont suis peux peut pouvez veux voudrais plait stp au aux en dans pour par sur
    avec que qui quoi quel quelle comment quand où
    el los las lo una unos unas y o yo tú él ella nosotros mi mis me te tu tus su sus es son soy
    está están puedes puede podrías quiero quisiera por para en con del al que qué cual cuál
    como cómo cuando dónde favor
    """.split()  # noqa: SIM905 (the words of each language read better as lines of text)
)
"""Words left out of what is indexed and asked (folded, as `fold` gives them)."""

_CONTRACTIONS = (
    # English contractions: "don't" means "do not" ("not" decides what is meant); "how's", "I'm", "you'll"
    # leave a letter or two that would otherwise match any word of that spelling ("s" in a unit's name).
    (re.compile(r"\bcan't\b"), "can not"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"n't\b"), " not"),
    (re.compile(r"(?<=[a-z])'(?:s|m|re|ll|ve|d)\b"), ""),
)
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


_STOP = frozenset(fold(word) for word in STOP_WORDS)


def split_identifier(text: str) -> str:
    """`setVolume` → `set Volume`, `HTTPServer` → `HTTP Server`; `_`, `.` and `-` part words anyway."""
    return _CAMEL.sub(" ", text)


def tokens(text: str, *, identifier: bool = False) -> list[Token]:
    """The words of `text`, each as the set of terms it matches (see the module's description)."""
    text = text[:MAX_TEXT]
    if identifier:
        text = split_identifier(text)
    text = fold(text)
    text = text.replace("\u2019", "'")  # the typographic apostrophe
    if "'" in text:
        for contraction, replacement in _CONTRACTIONS:
            text = contraction.sub(replacement, text)
    found: list[Token] = []
    for word in _WORD.findall(text):
        if word in _STOP:
            continue
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


def pairs(words: Sequence[Token]) -> list[str]:
    """Each two neighbouring words of one text as one term ("current weather"), each word by its shortest
    term, so that inflections pair alike. The space keeps a pair apart from every single word's term."""
    keys = [_shortest(word) for word in words]
    return [f"{a} {b}" for a, b in pairwise(keys)]


@lru_cache(maxsize=8192)
def _shortest(word: Token) -> str:
    return min(word, key=lambda term: (len(term), term))


MIN_STEM = 3
"""Stems shorter than this are dropped (the word itself stays): another language's stemmer cuts short
words into pieces that meet unrelated ones (French makes German "wie" into "wi", as in Wi-Fi)."""


@lru_cache(maxsize=8192)
def _stems(word: str) -> Token:
    stems = (stemmer.stemWord(word) for stemmer in _STEMMERS)
    return frozenset({word, *(stem for stem in stems if len(stem) >= MIN_STEM)})

"""The optional semantic signal: a static word-embedding model that ships inside its PyPI package.

WordLlama (`pip install aai-gateway[semantic]`) carries its 16 MB model and tokenizer in its wheel; it is
loaded from the package's own folder with downloads disabled, so nothing is fetched at run time. A text's
vector is the mean of its tokens' vectors: cheap (a fraction of a millisecond), and it meets words the
lexical index cannot ("tunes" and "music"). Loading costs memory and about half a second, so it is loaded
only when `search.semantic` is on, off the event loop, and search answers lexically until it is ready.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger("aai_gateway.search")


class Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> Any:
        """One unit-length row per text (a NumPy array)."""
        ...


class WordLlama:
    def __init__(self) -> None:
        import wordllama  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: PLC0415 (optional)

        folder = Path(wordllama.__file__).parent
        self._model = wordllama.WordLlama.load(dim=256, cache_dir=folder, disable_download=True)

    def embed(self, texts: Sequence[str]) -> Any:
        return self._model.embed(list(texts), norm=True)


def load() -> Embedder | None:
    """The model, or None (logged once) when it is not installed or does not load."""
    try:
        return WordLlama()
    except ImportError:
        log.warning("search.semantic is on, but wordllama is not installed (pip install 'aai-gateway[semantic]')")
    except Exception as exc:  # a broken install must not stop search: it answers lexically
        log.warning("the semantic search model did not load (%s: %s); searching by words only", type(exc).__name__, exc)
    return None

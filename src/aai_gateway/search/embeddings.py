"""The optional semantic signal from the user's own endpoint: `<llm.baseUrl>/embeddings` (OpenAI's API).

With `search.embeddings` on and `llm.embeddingModel` set, every operation's text is embedded in the
background, in batches, and kept on disk under the cache folder by a hash of the endpoint, the model and
the text, so a restart embeds only what is new. Search answers by words alone until the vectors are there;
then each query is embedded too, waiting at most `QUERY_WAIT` seconds. An endpoint that is down, slow, or
answers something that is not embeddings (too large, malformed, of other dimensions) leaves search on
words alone: the failure is logged once, when it starts, a failed query embedding is not asked again for
`COOLDOWN` seconds, and failed documents are asked again after `RETRY` seconds.

No NumPy: a cosine over 2,000 vectors of 768 dimensions takes ~30 ms in Python, too slow for each
search. Each vector is therefore also kept as a 128-dimension sketch (its dimensions summed into buckets
with random signs, which keeps dot products in expectation); the query's sketch is compared with every
document's, and the best `2 * count` are compared again in full: ~8 ms at 2,000 vectors of 768 dimensions,
~14 ms at 1,536 (over clustered random vectors, the true ten nearest were always among those found).
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import json
import logging
import math
import operator
import os
import random
import sys
import time
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import httpx2

from aai_gateway.config import LlmSettings, Settings
from aai_gateway.discovery.endpoint import EndpointFailed, new_client, post_json

log = logging.getLogger("aai_gateway.search")

QUERY_WAIT = 1.0
"""Seconds a search waits for its query's embedding before it answers by words alone."""
COOLDOWN = 60.0
"""Seconds during which a query is not embedded after a query's embedding failed."""
RETRY = 600.0
"""Seconds after which documents whose embedding failed are asked for again (at a search)."""
BATCH = 64
"""Texts per request."""
MAX_TEXT = 2000
"""Characters of one text that are sent."""
MAX_DIMS = 4096
ANSWER_BYTES_PER_TEXT = 96 * 1024
"""The answer's cap: this per text asked for (a 4,096-number vector is ~80 KB of JSON), plus 64 KiB."""
SKETCH = 128
QUERIES_KEPT = 256

Vector: TypeAlias = "array[float]"
"""A unit vector, as array("f")."""


class NotEmbeddings(Exception):
    """The endpoint's answer is not the embeddings asked for."""


def vectors_of(answer: bytes, count: int) -> list[Vector]:
    """The `count` unit vectors of an `/embeddings` answer, in the order asked; NotEmbeddings says what is wrong."""
    try:
        data = json.loads(answer)["data"]
    except (ValueError, KeyError, TypeError, RecursionError):
        raise NotEmbeddings("the answer is not an embeddings list (data[].embedding)") from None
    if not isinstance(data, list) or len(data) != count:
        raise NotEmbeddings(f"the answer holds {len(data) if isinstance(data, list) else 'no'} embeddings for {count}")
    found: list[Vector | None] = [None] * count
    dims = None
    for place, item in enumerate(data):
        embedding = item.get("embedding") if isinstance(item, dict) else None
        at = item.get("index", place) if isinstance(item, dict) else place
        if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < count or found[at] is not None:
            raise NotEmbeddings(f"embedding {place} has no index of its own")
        if not isinstance(embedding, list) or not 0 < len(embedding) <= MAX_DIMS:
            raise NotEmbeddings(f"embedding {place} is not a list of 1 to {MAX_DIMS} numbers")
        if dims is not None and len(embedding) != dims:
            raise NotEmbeddings(f"embedding {place} has {len(embedding)} dimensions, the others {dims}")
        dims = len(embedding)
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in embedding):
            raise NotEmbeddings(f"embedding {place} holds something other than numbers")
        unit = _unit(embedding)
        if unit is None:
            raise NotEmbeddings(f"embedding {place} is zero or not finite")
        found[at] = unit
    return [v for v in found if v is not None]


def _unit(numbers: Sequence[float]) -> Vector | None:
    norm = math.sqrt(math.fsum(x * x for x in numbers))
    if not math.isfinite(norm) or norm == 0:
        return None
    return array("f", (x / norm for x in numbers))


class Cache:
    """Vectors on disk, one file per text (`<key[:2]>/<key>.f32`, little-endian float32), written atomically."""

    def __init__(self, folder: Path, llm: LlmSettings) -> None:
        self.folder = folder
        self._salt = f"{llm.base_url.rstrip('/')}\n{llm.embedding_model}\n"

    def key(self, text: str) -> str:
        return hashlib.sha256((self._salt + text).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.f32"

    def read(self, key: str) -> Vector | None:
        try:
            data = self._path(key).read_bytes()
        except OSError:
            return None
        if not 0 < len(data) <= 4 * MAX_DIMS or len(data) % 4:
            return None
        vector = array("f", data)
        if sys.byteorder == "big":
            vector.byteswap()
        return _unit(vector)

    def write(self, key: str, vector: Vector) -> None:
        path = self._path(key)
        stored = array("f", vector)
        if sys.byteorder == "big":
            stored.byteswap()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_suffix(f".{os.getpid()}.part")
            part.write_bytes(stored.tobytes())
            part.replace(path)
        except OSError as exc:  # a full disk costs the next start some requests, nothing more
            log.debug("cannot keep an embedding in %s: %s", path, exc)


class Space:
    """The documents' vectors by document number, with their sketches; read by every search, never changed."""

    def __init__(self, vectors: Sequence[Vector]) -> None:
        self.dims = len(vectors[0]) if vectors else 0
        self._vectors = list(vectors)
        self._buckets, self._signs = _sketching(self.dims)
        self._sketches = [self.sketch(v) for v in self._vectors]

    def sketch(self, vector: Vector) -> Vector:
        out = [0.0] * SKETCH
        for value, bucket, sign in zip(vector, self._buckets, self._signs, strict=True):
            out[bucket] += value * sign
        return array("f", out)

    def nearest(self, query: Vector, count: int) -> dict[int, float]:
        """The `count` documents most like `query` (cosine, 0 at least), by document number."""
        if len(query) != self.dims or not self._vectors:
            return {}
        sketch = self.sketch(query)
        rough = heapq.nlargest(
            2 * count, range(len(self._sketches)), key=lambda doc: sum(map(operator.mul, sketch, self._sketches[doc]))
        )
        exact = {doc: sum(map(operator.mul, query, self._vectors[doc])) for doc in rough}
        best = sorted(exact, key=exact.__getitem__, reverse=True)[:count]
        return {doc: max(exact[doc], 0.0) for doc in best}


def _keep(cache: Cache, vectors: Sequence[tuple[str, Vector]]) -> None:
    for key, vector in vectors:
        cache.write(key, vector)


def _sketching(dims: int) -> tuple[list[int], list[float]]:
    chance = random.Random(dims)  # noqa: S311 (a fixed projection, not a secret)
    return [chance.randrange(SKETCH) for _ in range(dims)], [chance.choice((-1.0, 1.0)) for _ in range(dims)]


class Embeddings:
    """The endpoint, the cache on disk, and the space of the index searched last."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.llm = settings.llm
        self._timeout = self.llm.timeout if self.llm is not None else 60.0
        self._cache = (
            Cache(settings.cache_dir / "embeddings", self.llm)
            if self.llm is not None and self.llm.embedding_model is not None
            else None
        )
        self._space: tuple[object, Space] | None = None
        self._job: tuple[object, asyncio.Task[None]] | None = None
        self._failed_at = -RETRY
        self._query_failed_at = -COOLDOWN
        self._queries: dict[str, Vector] = {}
        self._failing: set[str] = set()
        self._client: httpx2.AsyncClient | None = None
        """Kept open for the gateway's life: connecting anew costs more than a local model's answer."""
        if self._cache is None:
            log.warning(
                "search.embeddings is on, but llm.baseUrl, llm.model and llm.embeddingModel are not all set; "
                "searching by words only"
            )

    async def nearest(self, index: object, texts: Sequence[str], query: str, count: int) -> Mapping[int, float]:
        """The documents of `index` (whose texts are `texts`) most like `query`; empty while that cannot be told."""
        if self._cache is None:
            return {}
        space = self._space[1] if self._space is not None and self._space[0] is index else None
        if space is None:
            self._start(index, texts)
            return {}
        vector = await self._query(query)
        if vector is None:
            return {}
        return await asyncio.to_thread(space.nearest, vector, count)

    def _start(self, index: object, texts: Sequence[str]) -> None:
        if self._job is not None and self._job[0] is index and not self._job[1].done():
            return
        if time.monotonic() - self._failed_at < RETRY:
            return
        if self._job is not None:
            self._job[1].cancel()
        self._job = (index, asyncio.create_task(self._embed_documents(index, list(texts))))

    async def _embed_documents(self, index: object, texts: list[str]) -> None:
        assert self._cache is not None
        cache = self._cache
        keys = [cache.key(text[:MAX_TEXT]) for text in texts]
        vectors: list[Vector | None] = await asyncio.to_thread(lambda: [cache.read(key) for key in keys])
        missing = [at for at, vector in enumerate(vectors) if vector is None]
        try:
            for start in range(0, len(missing), BATCH):
                batch = missing[start : start + BATCH]
                found = await self._embed([texts[at][:MAX_TEXT] for at in batch], self._timeout, "llm.timeout")
                for at, vector in zip(batch, found, strict=True):
                    vectors[at] = vector
                await asyncio.to_thread(
                    _keep, cache, [(keys[at], vector) for at, vector in zip(batch, found, strict=True)]
                )
            ready = [v for v in vectors if v is not None]
            if len({len(v) for v in ready}) > 1:
                raise NotEmbeddings("the vectors kept on disk and those answered now differ in dimensions")
        except Exception as exc:  # whatever the endpoint did, search goes on by words
            self._failed_at = time.monotonic()
            reason = exc if isinstance(exc, EndpointFailed | NotEmbeddings) else f"{type(exc).__name__}: {exc}"
            self._fail("documents", f"cannot embed the operations for search ({reason}); searching by words only")
            return
        space = await asyncio.to_thread(Space, ready)
        self._space = (index, space)
        self._recover("documents")
        log.info("search: %d operations embedded (%d asked for), %d dimensions", len(ready), len(missing), space.dims)

    async def _query(self, query: str) -> Vector | None:
        text = query[:MAX_TEXT]
        if text in self._queries:
            return self._queries[text]
        if time.monotonic() - self._query_failed_at < COOLDOWN:
            return None
        try:
            async with asyncio.timeout(QUERY_WAIT):
                (vector,) = await self._embed([text], QUERY_WAIT, "a search's wait for its query")
        except Exception as exc:  # whatever the endpoint did, this search goes on by words
            self._query_failed_at = time.monotonic()
            if isinstance(exc, TimeoutError):
                reason = f"no answer within {QUERY_WAIT:g} s"
            else:
                reason = str(exc) if isinstance(exc, EndpointFailed | NotEmbeddings) else f"{type(exc).__name__}: {exc}"
            self._fail("query", f"cannot embed search queries ({reason}); searching by words only")
            return None
        self._recover("query")
        if len(self._queries) >= QUERIES_KEPT:
            self._queries.pop(next(iter(self._queries)))
        self._queries[text] = vector
        return vector

    async def _embed(self, texts: list[str], timeout: float, timeout_name: str) -> list[Vector]:
        assert self.llm is not None
        url = self.llm.base_url.rstrip("/") + "/embeddings"
        body: dict[str, Any] = {"model": self.llm.embedding_model, "input": texts}
        cap = 64 * 1024 + ANSWER_BYTES_PER_TEXT * len(texts)
        if self._client is None:
            self._client = new_client(self._timeout)
        answer = await post_json(
            url,
            self.settings,
            body,
            api_key=self.llm.api_key,
            timeout=timeout,
            cap=cap,
            timeout_name=timeout_name,
            client=self._client,
        )
        return await asyncio.to_thread(vectors_of, answer, len(texts))

    def _fail(self, what: str, message: str) -> None:
        if what not in self._failing:
            self._failing.add(what)
            log.warning("%s", message)

    def _recover(self, what: str) -> None:
        if what in self._failing:
            self._failing.discard(what)
            log.info("search: embeddings answer again (%s)", what)

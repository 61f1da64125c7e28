"""The search every caller shares (the agent's `aai_search`, `library WORD`, the UI): the index over what
is installed, the web apps found before, the library and the stores, kept until one of them changes.

Building the index (analysis, and the semantic vectors when on) runs off the event loop; the stores are
fetched at most once per `STORE_REFRESH`, and whether each library app is on this machine is asked at most
once per `PRESENCE_REFRESH`. A store or a bus that does not answer leaves search working without it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from aai_gateway.config import Settings
from aai_gateway.descriptor import Descriptor
from aai_gateway.discovery import wellknown
from aai_gateway.history import HistoryStore
from aai_gateway.library import presence, store
from aai_gateway.library.entries import Catalog
from aai_gateway.library.presence import Found as Presence
from aai_gateway.search import semantic, sources
from aai_gateway.search.embeddings import Embeddings
from aai_gateway.search.index import CANDIDATES, Found, SearchIndex

log = logging.getLogger("aai_gateway.search")

STORE_REFRESH = 600.0
PRESENCE_REFRESH = 60.0
HISTORY_REFRESH = 60.0
RELIABILITY_DAYS = 30


@dataclass(frozen=True, slots=True)
class Usage:
    calls: int
    ok: int

    def text(self) -> str:
        return f"ran {self.ok} of {self.calls} times in {RELIABILITY_DAYS} days"


LoadCatalog = Callable[[], Awaitable[Catalog]]
CheckPresence = Callable[[Catalog], Awaitable[Mapping[str, Presence]]]


class Finder:
    def __init__(
        self,
        settings: Settings,
        *,
        apps: Callable[[], Sequence[Descriptor]],
        web_apps: Callable[[], Sequence[tuple[str, Descriptor]]],
        history: HistoryStore,
        load_catalog: LoadCatalog | None = None,
        check_presence: CheckPresence | None = None,
    ) -> None:
        self.settings = settings
        self._apps = apps
        self._web_apps = web_apps
        self._history = history
        self._load_catalog = load_catalog or self._library_and_stores
        self._check_presence = check_presence or self._on_this_machine
        self._catalog: tuple[float, Catalog] | None = None
        self._presence: tuple[float, Mapping[str, Presence]] = (-PRESENCE_REFRESH, {})
        self._usage: tuple[float, Mapping[tuple[str, str], Usage]] = (-HISTORY_REFRESH, {})
        self._index: tuple[tuple[Any, ...], SearchIndex] | None = None
        self._embedder: semantic.Embedder | None = None
        self._embedder_tried = False
        self._embeddings = Embeddings(settings) if settings.search_embeddings else None
        self._lock = asyncio.Lock()
        self.generation = 0
        """Bumped when something the index holds changed without a rescan (an MCP server's tool list)."""

    def changed(self) -> None:
        self.generation += 1

    async def search(self, query: str, limit: int) -> tuple[Found, Mapping[tuple[str, str], Usage]]:
        """The best `limit` operations for `query`, and how each app's tools have run here lately."""
        index = await self.index()
        usage = await self._used()
        successes = {key: u.ok for key, u in usage.items()}
        similarity = await self._similar(index, query)
        found = await asyncio.to_thread(index.search, query, limit, successes, similarity)
        here = await self._present(await self.catalogue())
        hits = tuple(replace(hit, operation=sources.on_this_machine(hit.operation, here)) for hit in found.hits)
        return replace(found, hits=hits), usage

    async def _similar(self, index: SearchIndex, query: str) -> Mapping[int, float]:
        """The operations most like `query` by the endpoint's embeddings (`search.embeddings`), when known."""
        if self._embeddings is None:
            return {}
        texts = index.semantic_texts
        return await self._embeddings.nearest(index, texts, query, CANDIDATES)

    async def index(self) -> SearchIndex:
        async with self._lock:
            apps = list(self._apps())
            web = list(self._web_apps())
            catalog = await self.catalogue()
            if self.settings.search_semantic and not self._embedder_tried:
                self._embedder_tried = True
                self._embedder = await asyncio.to_thread(semantic.load)
            key = (
                tuple(map(id, apps)),
                tuple(id(app) for _, app in web),
                id(catalog),
                self._embedder is not None,
                self.generation,
            )
            if self._index is not None and self._index[0] == key:
                return self._index[1]
            index = await asyncio.to_thread(self._build, apps, web, catalog)
            self._index = (key, index)
            return index

    def _build(
        self,
        apps: Sequence[Descriptor],
        web: Sequence[tuple[str, Descriptor]],
        catalog: Catalog,
    ) -> SearchIndex:
        started = time.perf_counter()
        cached = sources.cached_web(
            self.settings.cache_dir, self.settings.max_descriptor_bytes, {origin for origin, _ in web}
        )
        operations = [
            *sources.installed(apps, self.settings.platform, self.settings.cache_dir),
            *sources.web([*web, *cached]),
            *sources.library(catalog.entries, {a.app_id for a in apps}),
        ]
        index = SearchIndex(operations, self._embedder)
        log.debug("search index: %d operations in %.0f ms", len(operations), (time.perf_counter() - started) * 1000)
        return index

    async def _library_and_stores(self) -> Catalog:
        return await store.everything(self.settings.store_urls, wellknown.url_fetcher(self.settings))

    async def _on_this_machine(self, catalog: Catalog) -> Mapping[str, Presence]:
        return await presence.check(catalog.entries, self.settings)

    async def catalogue(self) -> Catalog:
        """The bundled library merged with the stores' entries (fetched at most once per `STORE_REFRESH`)."""
        now = time.monotonic()
        if self._catalog is not None and now - self._catalog[0] < STORE_REFRESH:
            return self._catalog[1]
        try:
            catalog = await self._load_catalog()
        except Exception as exc:  # a store or the library failing must not stop search
            log.warning("search goes on without the library and stores: %s: %s", type(exc).__name__, exc)
            catalog = Catalog(())
        self._catalog = (now, catalog)
        return catalog

    async def _present(self, catalog: Catalog) -> Mapping[str, Presence]:
        now = time.monotonic()
        if now - self._presence[0] < PRESENCE_REFRESH:
            return self._presence[1]
        try:
            here = await self._check_presence(catalog)
        except Exception as exc:  # presence only informs; search works without it
            log.warning("cannot tell which library apps are on this machine: %s: %s", type(exc).__name__, exc)
            here = {}
        self._presence = (now, here)
        return here

    async def _used(self) -> Mapping[tuple[str, str], Usage]:
        now = time.monotonic()
        if now - self._usage[0] < HISTORY_REFRESH:
            return self._usage[1]
        until = datetime.now(UTC)
        since = until - timedelta(days=RELIABILITY_DAYS)
        try:
            stats = await asyncio.to_thread(self._history.stats, since, until)
            usage = {(t.app, t.tool): Usage(t.calls, t.calls - t.errors) for t in stats.tools}
        except Exception as exc:  # the history only informs the ranking
            log.warning("search goes on without the history: %s: %s", type(exc).__name__, exc)
            usage = {}
        self._usage = (now, usage)
        return usage

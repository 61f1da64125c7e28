"""The cache of `.well-known/aai.json` files fetched by web:discover (seed 004).

`<cache_dir>/<host[_port]>/aai.json` holds the bytes as fetched; `aai.json.meta` beside it is JSON
`{url, fetched_at, ttl_hours, sha256}` (`fetched_at` in ISO 8601, UTC). Both are written atomically
(a temporary file in the same folder, then a rename), descriptor first, so a crash between the two
leaves a meta whose sha256 no longer matches: a broken entry, fetched again.

An entry is **fresh** while `0 <= now - fetched_at < ttl` with the TTL of the current settings (a clock
that went backwards makes it stale). An entry is **broken** when either file is missing or unreadable,
the meta is not what is written here, its url is not the one wanted, or the sha256 does not match.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aai_gateway import paths
from aai_gateway.descriptor.validate import read_bytes
from aai_gateway.discovery.sites import Site, url_site

log = logging.getLogger(__name__)

DESCRIPTOR = "aai.json"
META = "aai.json.meta"


@dataclass(frozen=True, slots=True)
class Meta:
    url: str
    fetched_at: float
    """Seconds since the epoch."""
    ttl_hours: float
    sha256: str

    def to_json(self) -> dict[str, Any]:
        when = datetime.fromtimestamp(self.fetched_at, UTC).isoformat().replace("+00:00", "Z")
        return {"url": self.url, "fetched_at": when, "ttl_hours": self.ttl_hours, "sha256": self.sha256}

    @classmethod
    def from_json(cls, data: Any) -> Meta | None:
        if not isinstance(data, dict):
            return None
        url, when, ttl, digest = (data.get(k) for k in ("url", "fetched_at", "ttl_hours", "sha256"))
        if not (isinstance(url, str) and isinstance(when, str) and isinstance(digest, str)):
            return None
        if not isinstance(ttl, int | float) or isinstance(ttl, bool):
            return None
        try:
            fetched = datetime.fromisoformat(when)
        except ValueError:
            return None
        if fetched.tzinfo is None:
            return None
        return cls(url=url, fetched_at=fetched.timestamp(), ttl_hours=float(ttl), sha256=digest)


@dataclass(frozen=True, slots=True)
class Entry:
    data: bytes
    meta: Meta


def is_fresh(fetched_at: float, now: float, ttl_hours: float) -> bool:
    age = now - fetched_at
    return 0 <= age < ttl_hours * 3600


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def folder(cache_dir: Path, site: Site) -> Path:
    return cache_dir / site.cache_key


def read(cache_dir: Path, site: Site, max_bytes: int) -> tuple[Entry | None, str]:
    """The cached entry of `site`, or None and why not ("" when there is simply none)."""
    where = folder(cache_dir, site)
    if not (where / META).exists() and not (where / DESCRIPTOR).exists():
        return None, ""
    raw, problem = read_bytes(where / META, 64 * 1024)
    if problem is not None:
        return None, f"meta {problem.message}"
    try:
        meta = Meta.from_json(json.loads(raw or b""))
    except (ValueError, RecursionError):
        meta = None
    if meta is None:
        return None, "meta is not a cache record"
    if meta.url != site.well_known_url:
        return None, f"meta is for {meta.url}"
    data, problem = read_bytes(where / DESCRIPTOR, max_bytes)
    if problem is not None or data is None:
        return None, f"{DESCRIPTOR} {problem.message if problem else 'is missing'}"
    if digest(data) != meta.sha256:
        return None, f"{DESCRIPTOR} does not match the sha256 of its meta"
    return Entry(data, meta), ""


MAX_SITES = 1000
"""Cached sites `every` looks at."""


def every(cache_dir: Path, max_bytes: int) -> list[tuple[Site, Entry]]:
    """Every site in the cache with an entry that is not broken (fresh or not), in folder order; the rest
    are skipped. Reads files: call it off the event loop."""
    try:
        folders = sorted(p for p in cache_dir.iterdir() if (p / META).is_file())[:MAX_SITES]
    except OSError:
        return []
    found = []
    for where in folders:
        raw, problem = read_bytes(where / META, 64 * 1024)
        try:
            meta = Meta.from_json(json.loads(raw or b"")) if problem is None else None
        except (ValueError, RecursionError):
            meta = None
        if meta is None:
            continue
        site = url_site(meta.url)
        if site is None or site.well_known_url != meta.url or folder(cache_dir, site) != where:
            continue
        entry, _ = read(cache_dir, site, max_bytes)
        if entry is not None:
            found.append((site, entry))
    return found


def write(cache_dir: Path, site: Site, data: bytes, meta: Meta) -> None:
    """Store an entry; a cache that cannot be written is logged, never an error for the caller."""
    where = folder(cache_dir, site)
    try:
        where.mkdir(parents=True, exist_ok=True)
        paths.write_atomic(where / DESCRIPTOR, data)
        paths.write_atomic(where / META, json.dumps(meta.to_json(), indent=2).encode() + b"\n")
    except OSError as exc:
        log.warning("cannot cache %s in %s: %s", site.well_known_url, where, exc)

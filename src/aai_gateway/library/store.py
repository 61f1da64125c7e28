"""Store indexes: JSON documents (`store.schema.json`) listing descriptors anyone can host.

An index lists entries with an id, names, a description, a version, the descriptor's URL (absolute, or
relative to the index's own URL) and the SHA-256 of its bytes. `storeUrls` in the config names the
indexes; each is fetched through the gateway's web guards (the caller passes the fetching function:
https, size cap, timeout, no private or loopback addresses unless the config allows them).

Merging: the bundled library comes first; a store's entry replaces one with the same id only when its
version is newer (compared number by number: 1.10 > 1.9). Between stores, the newer version wins, and on
equal versions the store listed first in `storeUrls`.

An index that cannot be fetched or is not an index is a problem of its own; the other stores and the
bundled entries are still listed. Within an index, a malformed entry is left out and reported.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from jsonschema import Draft7Validator

from aai_gateway import paths
from aai_gateway.descriptor import Name
from aai_gateway.errors import AaiError, AaiJsonInvalid
from aai_gateway.library.entries import (
    OTHER,
    Catalog,
    Entry,
    Rating,
    bundled,
    names_json,
    presence_of,
    verified_of,
)
from aai_gateway.problems import Problem, describe, pointer

Fetch = Callable[[str, int], Awaitable[bytes]]
"""Fetches a URL under the web guards: (url, the most bytes taken)."""
INDEX_MAX_BYTES = 8 << 20
"""The largest store index read: an index lists every entry of a store, so it is not held to
maxDescriptorBytes (8 MiB holds tens of thousands of entries)."""
"""Fetches a URL's bytes under the web guards; raises AaiError when it may not or cannot."""

INDEX = "index.json"
FORMAT_VERSION = 1


@cache
def index_validator() -> Draft7Validator:
    schema = json.loads(files("aai_gateway.library").joinpath("store.schema.json").read_text("utf-8"))
    return Draft7Validator(schema)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def version_key(version: str) -> tuple[int, ...]:
    """`1.10.0` → (1, 10, 0); anything that is not numbers and dots sorts first."""
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        return ()


def parse_index(data: bytes, url: str) -> Catalog:
    """The entries of an index document fetched from `url`, each malformed one left out and reported."""
    try:
        doc = json.loads(data.decode("utf-8-sig"), parse_constant=_not_json)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return Catalog((), (Problem(url, "", f"is not a JSON store index: {exc}"),))
    try:
        errors = sorted(index_validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    except RecursionError:
        return Catalog((), (Problem(url, "", "is nested too deeply to check"),))
    whole = [e for e in errors if len(e.absolute_path) < 2 or e.absolute_path[0] != "entries"]
    problems = [Problem(url, pointer(e.absolute_path), describe(e)) for e in errors]
    if whole:
        return Catalog((), tuple(problems))
    bad = {e.absolute_path[1] for e in errors}
    store_name = str(doc["store"]["name"])
    entries: dict[str, Entry] = {}
    for index, raw in enumerate(doc["entries"]):
        if index in bad:
            continue
        entry = _entry(raw, url, store_name)
        if entry.app_id in entries:
            problems.append(Problem(url, f"/entries/{index}/id", f"lists {entry.app_id} again; the first is kept"))
            continue
        entries[entry.app_id] = entry
    return Catalog(tuple(entries.values()), tuple(problems))


def _not_json(word: str) -> Any:
    raise ValueError(f"{word} is not a JSON number")


def _entry(raw: dict[str, Any], url: str, store_name: str) -> Entry:
    rating = raw.get("rating")
    return Entry(
        app_id=raw["id"],
        names=tuple(Name(text, lang) for lang, text in raw["names"].items()),
        description=raw["description"],
        version=raw["version"],
        source=url,
        aliases=tuple(raw.get("aliases", ())),
        tools=tuple(raw.get("tools", ())),
        platforms=tuple(raw.get("platforms", ())),
        why=str(raw.get("why", "")),
        presence=presence_of(raw["presence"]) if "presence" in raw else None,
        verified=verified_of(raw["verified"]) if "verified" in raw else None,
        descriptor_url=urljoin(url, raw["descriptorUrl"]),
        sha256=raw["sha256"],
        store_name=store_name,
        category=raw.get("category", OTHER),
        rating=Rating(float(rating["average"]), int(rating["count"])) if rating else None,
        reviews_url=raw.get("reviewsUrl", ""),
    )


async def load_stores(urls: Sequence[str], fetch: Fetch) -> Catalog:
    """Every store's entries (stores in order, later duplicates resolved by `merge`) and their problems."""

    async def one(url: str) -> Catalog:
        try:
            return parse_index(await fetch(url, INDEX_MAX_BYTES), url)
        except AaiError as exc:
            return Catalog((), (Problem(url, "", f"the store index cannot be fetched: {exc.detail}"),))

    catalogs = await asyncio.gather(*(one(u) for u in urls))
    return Catalog(
        tuple(e for c in catalogs for e in c.entries),
        tuple(p for c in catalogs for p in c.problems),
    )


def merge(bundled: Catalog, stores: Catalog) -> Catalog:
    """The bundled entries, each replaced by a store's newer version; then the store's other entries."""
    chosen: dict[str, Entry] = {e.app_id: e for e in bundled.entries}
    for entry in stores.entries:
        present = chosen.get(entry.app_id)
        if present is None or version_key(entry.version) > version_key(present.version):
            chosen[entry.app_id] = entry
    return Catalog(tuple(chosen.values()), (*bundled.problems, *stores.problems))


async def everything(store_urls: Sequence[str], fetch: Fetch) -> Catalog:
    """The bundled library merged with every store's index (no network when no store is configured)."""
    return merge(bundled(), await load_stores(store_urls, fetch))


async def fetch_descriptor(entry: Entry, fetch: Fetch, max_bytes: int) -> bytes:
    """A store entry's descriptor bytes, refused unless their SHA-256 is the one the index gives."""
    assert entry.descriptor_url is not None
    assert entry.sha256 is not None
    data = await fetch(entry.descriptor_url, max_bytes)
    got = sha256(data)
    if got != entry.sha256:
        raise AaiJsonInvalid(
            f"{entry.descriptor_url} has SHA-256 {got}, but the store index {entry.source} lists {entry.sha256} "
            f"for {entry.app_id}; the descriptor is refused (it changed after the index was written, "
            "or someone tampered with it)"
        )
    return data


def index_entry(entry: Entry, descriptor_url: str) -> dict[str, Any]:
    """An entry as a store index lists it."""
    assert entry.data is not None
    raw: dict[str, Any] = {
        "id": entry.app_id,
        "names": names_json(entry.names),
        "aliases": list(entry.aliases),
        "description": entry.description,
        "version": entry.version,
        "descriptorUrl": descriptor_url,
        "sha256": sha256(entry.data),
        "tools": list(entry.tools),
        "platforms": list(entry.platforms),
    }
    if entry.why:
        raw["why"] = entry.why
    if entry.presence is not None:
        raw["presence"] = entry.presence.to_json()
    if entry.verified is not None:
        raw["verified"] = entry.verified.to_json()
    if entry.category != OTHER:
        raw["category"] = entry.category
    if entry.rating is not None:
        raw["rating"] = entry.rating.to_json()
    if entry.reviews_url:
        raw["reviewsUrl"] = entry.reviews_url
    return raw


def publish(entries: Iterable[Entry], folder: Path, name: str) -> Path:
    """Write `index.json` and `apps/<appId>/aai.json` for each entry under `folder`; returns the index's path.

    Descriptor URLs are relative, so the folder can be served from any https URL as it is.
    """
    listed = []
    for entry in entries:
        assert entry.data is not None, entry.app_id
        relative = f"apps/{entry.app_id}/aai.json"
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        paths.write_atomic(target, entry.data)
        listed.append(index_entry(entry, relative))
    doc = {"store": {"name": name, "formatVersion": FORMAT_VERSION}, "entries": listed}
    problems = [describe(e) for e in index_validator().iter_errors(doc)]
    assert not problems, problems
    index = folder / INDEX
    paths.write_atomic(index, (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").encode())
    return index

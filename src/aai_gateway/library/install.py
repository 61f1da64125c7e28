"""Installing a descriptor: check it, then write `<AAI home>/<appId>/aai.json` whole or not at all.

What was installed is remembered in `<AAI home>/installed.json` (app id → SHA-256 of the bytes written,
where they came from, when). A file whose bytes still have that hash is the gateway's own and may be
replaced by another version; a file with other bytes was edited by the user (or put there by hand) and
is replaced only when asked to (`force`), after a copy is kept beside it (`aai.json.bak`, or
`aai.json.1.bak`, `aai.json.2.bak`, … when that name is taken: see paths.keep_backup).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from aai_gateway import paths
from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.validate import check_bytes, read_bytes
from aai_gateway.errors import AaiJsonInvalid, AppNotFound
from aai_gateway.executors.script_checks import with_script_checks
from aai_gateway.library.entries import Catalog
from aai_gateway.library.search import near
from aai_gateway.library.store import Fetch, fetch_descriptor, sha256

RECORD = "installed.json"
LIBRARY_SOURCE = "the library"
BACKUP = "aai.json.bak"
"""The first backup's name; later ones are numbered."""
Outcome = Literal["installed", "updated", "unchanged", "replaced"]

log = logging.getLogger(__name__)


class EditedFile(Exception):
    """The target holds bytes the gateway did not write; installing over them needs `force`."""

    def __init__(self, path: Path, known: bool) -> None:
        how = "was changed since it was installed" if known else "was not installed by aai-gateway"
        super().__init__(f"{path} {how}; it is left as it is (--force replaces it, keeping a copy beside it)")
        self.path = path


@dataclass(frozen=True, slots=True)
class Installed:
    app: Descriptor
    path: Path
    outcome: Outcome
    source: str
    warnings: tuple[str, ...] = ()
    backup: Path | None = None


def check(data: bytes, source: str) -> tuple[Descriptor, tuple[str, ...]]:
    """The descriptor in `data` and its warnings; AaiJsonInvalid naming every error when it is invalid."""
    loaded = with_script_checks(check_bytes(data, source))
    errors = [str(p) for p in loaded.problems if p.severity == "error"]
    if loaded.descriptor is None or errors:
        listed = "\n  ".join(errors) or f"{source}: cannot be read"
        raise AaiJsonInvalid(f"{source} is not a valid descriptor:\n  {listed}")
    return loaded.descriptor, tuple(str(p) for p in loaded.problems)


def install(data: bytes, source: str, aai_home: Path, *, force: bool = False) -> Installed:
    """Check `data` and write it as `<aai_home>/<appId>/aai.json`; raises AaiJsonInvalid, EditedFile, OSError."""
    app, warnings = check(data, source)
    folder = aai_home / app.app_id
    target = folder / "aai.json"
    records = read_records(aai_home)
    known = records.get(app.app_id, {}).get("sha256")
    current = _current(target)
    backup = None
    if current is None:
        outcome: Outcome = "installed"
    elif current == data:
        outcome = "unchanged"
    elif known is not None and sha256(current) == known:
        outcome = "updated"
    elif not force:
        raise EditedFile(target, known is not None)
    else:
        backup = paths.keep_backup(target, current)
        outcome = "replaced"
    if outcome != "unchanged":
        folder.mkdir(parents=True, exist_ok=True)
        paths.write_atomic(target, data)
    records[app.app_id] = {
        "sha256": sha256(data),
        "source": source,
        "version": app.version,
        "installedAt": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }
    _write_records(aai_home, records)
    return Installed(app, target, outcome, source, warnings, backup)


def _current(target: Path) -> bytes | None:
    try:
        return target.read_bytes()
    except FileNotFoundError:
        return None


def read_records(aai_home: Path) -> dict[str, dict[str, Any]]:
    """What was installed, by app id; an unreadable record counts as none (every file is then the user's)."""
    try:
        doc = json.loads((aai_home / RECORD).read_text("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s: %s", aai_home / RECORD, exc)
        return {}
    if not isinstance(doc, dict):
        return {}
    return {k: v for k, v in doc.items() if isinstance(v, dict)}


def _write_records(aai_home: Path, records: dict[str, dict[str, Any]]) -> None:
    aai_home.mkdir(parents=True, exist_ok=True)
    text = json.dumps(dict(sorted(records.items())), ensure_ascii=False, indent=2) + "\n"
    paths.write_atomic(aai_home / RECORD, text.encode())


def approval_source(aai_home: Path, app_id: str) -> str | None:
    """Where `app_id`'s descriptor was installed from, when that calls for the user's yes to the program it
    runs (a store, a URL, the library); None for a file the user installed, wrote or imported."""
    record = read_records(aai_home).get(app_id)
    source = record.get("source") if record is not None else None
    if isinstance(source, str) and (looks_like_url(source) or source.startswith(LIBRARY_SOURCE)):
        return source
    return None


def looks_like_url(text: str) -> bool:
    return text.lower().startswith(("https://", "http://"))


def looks_like_file(text: str) -> bool:
    """A path, not an id: it has a folder separator or ends in .json, or a file of that name is here.

    A folder named like an id (`~/.aai/org.example.app` when run in `~/.aai`) does not count.
    """
    return "/" in text or "\\" in text or text.endswith(".json") or Path(text).is_file()


async def obtain(what: str, catalog: Catalog, fetch: Fetch, max_bytes: int) -> tuple[bytes, str]:
    """The bytes `what` names (an https URL, a file, or a library entry's id) and where they came from.

    Raises AaiError (a URL refused or failing, an id not in `catalog`) or OSError (a file).
    """
    if looks_like_url(what):
        return await fetch(what, max_bytes), what
    if looks_like_file(what):
        data, problem = read_bytes(Path(what), max_bytes)
        if problem is not None or data is None:
            raise AaiJsonInvalid(str(problem) if problem else f"{what}: cannot be read")
        return data, str(Path(what).resolve())
    entry = catalog.get(what)
    if entry is None:
        close = near(catalog.entries, what)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise AppNotFound(f"the library has no entry {what!r}{hint} (`aai-gateway library WORD` searches it)")
    if entry.bundled:
        assert entry.data is not None
        return entry.data, f"{LIBRARY_SOURCE} (entry {entry.app_id} {entry.version})"
    data = await fetch_descriptor(entry, fetch, max_bytes)
    app, _ = check(data, str(entry.descriptor_url))
    if app.app_id != entry.app_id:
        raise AaiJsonInvalid(f"{entry.descriptor_url} describes {app.app_id}, but the store lists it as {entry.app_id}")
    return data, str(entry.descriptor_url)

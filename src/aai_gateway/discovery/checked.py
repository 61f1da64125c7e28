"""Which descriptor files passed their checks before, so that a restart only parses and normalises them.

Kept in `<cache_dir>/_checked/<rules fingerprint>.json` as `{path: [mtime_ns, size, blake2b, warnings]}`
for valid files only: an entry serves when the path, mtime, size and the hash of the bytes just read all
match. The fingerprint changes with the package version, the schemas and the checking code, so a new
version never trusts an old verdict. Losing or corrupting the file only costs a full check.

Within one process a rescan goes further: a file whose bytes hash as they did in the last scan keeps the
descriptor that scan made, unparsed. A rescan of 1,000 unchanged descriptors then makes no second copy of
them (about 20 MB, which the allocator would keep afterwards) and spends no time parsing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aai_gateway.descriptor.validate import Loaded, check_bytes, load_checked, read_bytes, rules_fingerprint
from aai_gateway.problems import Problem

log = logging.getLogger(__name__)

FOLDER = "_checked"
"""Web descriptors are cached beside, in folders named after their host, which is never empty."""

Entry = list[Any]
"""`[mtime_ns, size, blake2b hex, [[pointer, message], ...]]`, as stored in JSON."""
Parsed = Mapping[str, tuple[str, Loaded]]
"""Each good file's blake2b hex and what it loaded to, by path: what the next scan may reuse."""


class Checked:
    def __init__(self, cache_dir: Path, last: Parsed | None = None) -> None:
        self.file = cache_dir / FOLDER / f"{rules_fingerprint()}.json"
        self._old = _read(self.file)
        self._new: dict[str, Entry] = {}
        self._last: Parsed = last or {}
        self.parsed: dict[str, tuple[str, Loaded]] = {}
        """This scan's good files, for the next scan."""

    def load(self, path: Path, max_bytes: int) -> Loaded:
        """What `validate.load` would give, without the checks when these exact bytes passed them before."""
        source = str(path)
        data, problem = read_bytes(path, max_bytes)
        if problem is not None:
            return Loaded(source, None, (problem,))
        assert data is not None
        try:
            info = path.stat()
        except OSError:
            return check_bytes(data, source)
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        key = [info.st_mtime_ns, info.st_size, digest]
        old = self._old.get(source)
        last = self._last.get(source)
        if last is not None and last[0] == digest:
            loaded = last[1]
        elif old is not None and old[:3] == key:
            loaded = load_checked(data, source, [Problem(source, p, m, "warning") for p, m in old[3]])
        else:
            loaded = check_bytes(data, source)
        if loaded.ok:
            self._new[source] = [*key, [[p.pointer, p.message] for p in loaded.problems]]
            self.parsed[source] = (digest, loaded)
        return loaded

    def save(self) -> None:
        """Keep this scan's verdicts, and those of files other scans (other settings) saw that still exist."""
        kept = {k: v for k, v in self._old.items() if k not in self._new and Path(k).exists()}
        entries = self._new | kept
        if entries == self._old:
            return
        folder = self.file.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _write(folder, self.file, entries)
            for stale in folder.iterdir():
                if stale != self.file and not stale.name.endswith(".tmp"):
                    stale.unlink(missing_ok=True)
        except OSError as exc:
            log.debug("cannot keep descriptor verdicts in %s: %s", folder, exc)
            return
        self._old = entries


def _write(folder: Path, file: Path, entries: dict[str, Entry]) -> None:
    """Atomically: a temporary file in the same folder, then a rename."""
    with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".tmp", delete=False, encoding="utf-8") as out:
        temporary = Path(out.name)
        try:
            json.dump(entries, out, ensure_ascii=False, separators=(",", ":"))
        except BaseException:
            out.close()
            temporary.unlink(missing_ok=True)
            raise
    try:
        temporary.replace(file)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


def _read(file: Path) -> dict[str, Entry]:
    try:
        data: Any = json.loads(file.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if _is_entry(v)}


def _is_entry(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 4
        and isinstance(value[0], int)
        and isinstance(value[1], int)
        and isinstance(value[2], str)
        and isinstance(value[3], list)
        and all(isinstance(w, list) and len(w) == 2 and all(isinstance(x, str) for x in w) for w in value[3])
    )

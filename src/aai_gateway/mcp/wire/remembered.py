"""The `tools/list` answer of the last stdio start, remembered, so that a restart gives it before scanning.

An agent that starts the gateway waits for `initialize` and then `tools/list` (see early.py). With 1,000
descriptors the scan before the listing took 75-90 ms of the quarter of a second the listing took. What the
listing says depends only on the code, the settings, and the files a scan and the saved workflows read, so
the answer is kept in `<cache dir>/_listing.json` under a key made of all of them: the version and the
source of the modules that check descriptors and write listings; the settings; and for each descriptor
file and saved workflow its path, size, inode, and modification and change times (the change time
cannot be set back, unlike the modification time). Working the key out lists the scan paths and takes
one `stat` a file: 10-12 ms at 1,000 descriptors.

A start whose key matches answers `tools/list` with the kept answer and scans afterwards. Should the scan
list anything else after all (a file rewritten within the file system's clock tick, keeping its size and
inode), the client is told `notifications/tools/list_changed` before the answer to its next request, as
after any change made while the gateway starts.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from aai_gateway import paths
from aai_gateway.config import Settings
from aai_gateway.descriptor import guide
from aai_gateway.descriptor.validate import rules_fingerprint
from aai_gateway.discovery.scan import candidates
from aai_gateway.mcp import catalogue, names
from aai_gateway.problems import Problem
from aai_gateway.workflows.saved import MAX_WORKFLOWS

log = logging.getLogger(__name__)

KEPT = "_listing.json"
"""Beside the web descriptors' folders, each named after its host (and `_port`): never a name that starts with an
underscore, as the host is never empty."""
MAX_KEPT_BYTES = 16 * 1024 * 1024

Tools = list[dict[str, Any]]


class Remembered:
    """The listing kept for this start's key, if any (`tools`), and keeping the listing the scan gives."""

    def __init__(self, settings: Settings) -> None:
        self.file = settings.cache_dir / KEPT
        self.tools: Tools | None = None
        self.given = False
        """Whether the client was answered with `tools`."""
        try:
            self.key: str | None = listing_key(settings)
        except OSError as exc:  # a source file gone from under the installed package: nothing is kept
            log.debug("no tool listing is kept: %s", exc)
            self.key = None
            return
        try:
            kept = json.loads(paths.read_limited(self.file, MAX_KEPT_BYTES))
        except (paths.NotRead, ValueError, RecursionError):
            return
        if isinstance(kept, dict) and kept.get("key") == self.key and _listing(kept.get("tools")):
            self.tools = kept["tools"]

    def keep(self, tools: Tools) -> bool:
        """Keep the listing the scan gives for the next start; whether the client was given another."""
        plain = json.loads(json.dumps(tools))
        if self.key is None or plain == self.tools:
            return False
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            kept = {"key": self.key, "tools": plain}
            data = json.dumps(kept, ensure_ascii=False, separators=(",", ":")).encode()
            paths.write_atomic(self.file, data, durable=False)
        except OSError as exc:
            log.debug("cannot keep the tool listing in %s: %s", self.file, exc)
        return self.given


def listing_key(settings: Settings) -> str:
    """What the listing depends on, as a digest (see the module's account)."""
    digest = hashlib.blake2b(rules_fingerprint().encode(), digest_size=16)
    for source in (catalogue.__file__, names.__file__, guide.__file__, __file__):
        digest.update(Path(source).read_bytes())
    digest.update(repr(settings).encode())
    problems: list[Problem] = []
    files = [*candidates(settings, problems), *sorted(settings.workflows_dir.glob("*.json"))[:MAX_WORKFLOWS]]
    for problem in problems:
        digest.update(f"{problem}\n".encode())
    for file in files:
        try:
            info = os.stat(file)  # noqa: PTH116 - once a file: without pathlib's overhead
        except OSError as exc:
            digest.update(f"{file}\0{exc.errno}\n".encode())
            continue
        digest.update(f"{file}\0{info.st_size}\0{info.st_ino}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\n".encode())
    return digest.hexdigest()


def _listing(tools: Any) -> bool:
    """Whether `tools` is a list of tools, each named and with an input schema, as a listing holds."""
    return isinstance(tools, list) and all(
        isinstance(tool, dict) and isinstance(tool.get("name"), str) and isinstance(tool.get("inputSchema"), dict)
        for tool in tools
    )

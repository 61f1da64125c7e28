"""The user's yes to a triggered workflow: nobody is asked when a trigger starts one, so it runs only once
the user approved it, having seen every tool it may run and every trigger; the approval holds for the
file as it was (a SHA-256 of it), so editing the file withdraws it until approved again."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aai_gateway.paths import NotRead, read_limited, write_atomic
from aai_gateway.workflows.saved import Saved

log = logging.getLogger("aai_gateway.workflows")

FILE = "workflow-approvals.json"
MAX_BYTES = 4_000_000


@dataclass(frozen=True, slots=True)
class Approval:
    workflow: str
    fingerprint: str
    tools: tuple[str, ...]
    triggers: tuple[str, ...]
    at: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "tools": list(self.tools),
            "triggers": list(self.triggers),
            "at": self.at,
            "source": self.source,
        }


def fingerprint(saved: Saved) -> str:
    """The workflow as written, whatever its formatting: any edit changes it."""
    canonical = json.dumps(saved.document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class Approvals:
    """`workflow-approvals.json` in the AAI home, read again whenever it changed on disk."""

    def __init__(self, aai_home: Path) -> None:
        self.path = aai_home / FILE
        self._seen: tuple[float, int] | None = None
        self._approved: dict[str, Approval] = {}

    def all(self) -> dict[str, Approval]:
        try:
            stat = self.path.stat()
        except OSError:
            self._seen, self._approved = None, {}
            return {}
        if self._seen != (stat.st_mtime, stat.st_size):
            self._seen, self._approved = (stat.st_mtime, stat.st_size), self._read()
        return self._approved

    def current(self, saved: Saved) -> Approval | None:
        """The approval that holds for `saved` as it is now, if any."""
        approval = self.all().get(saved.id)
        return approval if approval is not None and approval.fingerprint == fingerprint(saved) else None

    def approve(self, saved: Saved, tools: list[str], *, source: str) -> Approval:
        approval = Approval(
            saved.id,
            fingerprint(saved),
            tuple(tools),
            tuple(str(t) for t in saved.triggers),
            datetime.now(UTC).isoformat(timespec="seconds"),
            source,
        )
        self._write({**self._read(), saved.id: approval})
        return approval

    def revoke(self, workflow: str) -> bool:
        approved = self._read()
        if approved.pop(workflow, None) is None:
            return False
        self._write(approved)
        return True

    def _read(self) -> dict[str, Approval]:
        if not self.path.exists():
            return {}
        try:
            raw = json.loads(read_limited(self.path, MAX_BYTES))
        except (NotRead, ValueError) as exc:
            log.warning("%s cannot be read (%s): no triggered workflow is approved until it is fixed", self.path, exc)
            return {}
        found: dict[str, Approval] = {}
        for workflow, entry in (raw.get("approved") or {}).items() if isinstance(raw, Mapping) else ():
            try:
                found[workflow] = Approval(
                    workflow,
                    str(entry["fingerprint"]),
                    tuple(map(str, entry.get("tools", ()))),
                    tuple(map(str, entry.get("triggers", ()))),
                    str(entry.get("at", "")),
                    str(entry.get("source", "")),
                )
            except (KeyError, TypeError, AttributeError):
                log.warning("%s: the approval of %s is malformed and is ignored", self.path, workflow)
        return found

    def _write(self, approved: Mapping[str, Approval]) -> None:
        data = {"approved": {k: v.to_json() for k, v in sorted(approved.items())}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode())
        self._seen = None

"""How often each app's and tool's calls succeeded lately ("ran 48 of 50 times in 30 days"), from the history.

Read from the hourly counts `stats` keeps, so it costs the same for any size of history; shown by
`library` and the UI, and meant for ranking search results too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from aai_gateway.history.store import HistoryStore

WINDOW_DAYS = 30


@dataclass(frozen=True, slots=True)
class Success:
    ok: int
    calls: int
    days: int

    @property
    def rate(self) -> float:
        return self.ok / self.calls if self.calls else 0.0

    def text(self) -> str:
        return f"ran {self.ok} of {self.calls} time{'s' if self.calls != 1 else ''} in {self.days} days"

    def to_json(self) -> dict[str, int]:
        return {"ok": self.ok, "calls": self.calls, "days": self.days}


@dataclass(frozen=True, slots=True)
class SuccessRates:
    """Calls and successes per (app, tool) over the last `days` days."""

    days: int
    counts: dict[tuple[str, str], tuple[int, int]]

    def tool(self, app: str, tool: str) -> Success | None:
        found = self.counts.get((app, tool))
        return None if found is None else Success(found[0] - found[1], found[0], self.days)

    def app(self, app: str) -> Success | None:
        mine = [(calls, errors) for (name, _), (calls, errors) in self.counts.items() if name == app]
        if not mine:
            return None
        calls = sum(c for c, _ in mine)
        return Success(calls - sum(e for _, e in mine), calls, self.days)


def success_rates(store: HistoryStore, now: datetime, days: int = WINDOW_DAYS) -> SuccessRates:
    """Each app's and tool's calls and successes in the `days` days up to `now`; raises HistoryUnavailable."""
    return SuccessRates(days, store.tool_counts(now - timedelta(days=days), now))

"""MCP tool names in both spellings, and what a called name means.

By default the listed names match `^[a-zA-Z0-9_-]{1,64}$` (`app_com_apple_mail`, `aai_exec`, `aai_batch`,
`aai_search`, `web_discover`, direct calls `com_apple_mail__send_email`), the only names many clients accept;
`toolNames: "seed"` lists the protocol's own (`app:com.apple.mail`, `aai:exec`, `aai:batch`, `aai:search`,
`web:discover`,
`com.apple.mail:send_email`). Calls are accepted in either spelling whatever the setting.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from aai_gateway.descriptor import Descriptor
from aai_gateway.spelling import (
    MAX,
    SEED,
    SEED_APP_PREFIX,
    SEED_BATCH,
    SEED_DISCOVER,
    SEED_EXEC,
    SEED_INSTALL,
    SEED_RUN,
    SEED_SEARCH,
    SEED_WAIT,
    STRICT,
    strict,
)
from aai_gateway.spelling import spelling as spelling_of

APP_PREFIX = SEED_APP_PREFIX
EXEC = SEED_EXEC
BATCH = SEED_BATCH
DISCOVER = SEED_DISCOVER
SEARCH = SEED_SEARCH
INSTALL = SEED_INSTALL
RUN = SEED_RUN
WAIT = SEED_WAIT

Kind = Literal["guide", "exec", "batch", "run", "wait", "discover", "search", "install", "direct"]


@dataclass(frozen=True, slots=True)
class Target:
    kind: Kind
    app_id: str = ""
    tool: str = ""


def _unique(name: str, key: str, taken: dict[str, Target]) -> str:
    """`name`, or, when another target already has it, a variant made unique by a hash of `key`."""
    if name not in taken:
        return name
    suffix = "_" + hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:8]
    return name[: MAX - len(suffix)] + suffix


class Names:
    """The names listed for one set of apps, and the resolution of any name a client calls."""

    def __init__(self, apps: Iterable[Descriptor], platform: str, style: str = STRICT) -> None:
        self.style = style
        self.spelling = spelling_of(style)
        self.collisions: list[str] = []
        self._strict: dict[str, Target] = {
            strict(EXEC): Target("exec"),
            strict(BATCH): Target("batch"),
            strict(DISCOVER): Target("discover"),
            strict(SEARCH): Target("search"),
            strict(INSTALL): Target("install"),
            strict(RUN): Target("run"),
            strict(WAIT): Target("wait"),
        }
        self._guide_names: dict[str, str] = {}
        for app in apps:
            self._guide_names[app.app_id] = self._claim(strict(APP_PREFIX + app.app_id), Target("guide", app.app_id))
            for _, tool in app.tools(platform):
                self._claim(strict(f"{app.app_id}__{tool.name}"), Target("direct", app.app_id, tool.name))

    def _claim(self, name: str, target: Target) -> str:
        unique = _unique(name, f"{target.kind}:{target.app_id}:{target.tool}", self._strict)
        if unique != name:
            what = f"{target.app_id}:{target.tool}" if target.tool else f"app {target.app_id}"
            self.collisions.append(f"strict tool name '{name}' is taken; {what} is called '{unique}'")
        self._strict[unique] = target
        return unique

    @property
    def exec(self) -> str:
        return self.spelling.exec

    @property
    def batch(self) -> str:
        return self.spelling.batch

    @property
    def run(self) -> str:
        return self.spelling.run

    @property
    def wait(self) -> str:
        return self.spelling.wait

    @property
    def discover(self) -> str:
        return self.spelling.discover

    @property
    def search(self) -> str:
        return self.spelling.search

    @property
    def install(self) -> str:
        return self.spelling.install

    def guide(self, app_id: str) -> str:
        return APP_PREFIX + app_id if self.style == SEED else self._guide_names[app_id]

    def direct_pattern(self) -> str:
        """How a direct call of the resource model is spelled, for texts that speak of all of them."""
        return "<appId>:<tool>" if self.style == SEED else "<appId with . as _>__<tool>"

    def resolve(self, name: str) -> Target | None:
        """What a called name means, in either spelling; None when it means nothing."""
        if name == EXEC:
            return Target("exec")
        if name == BATCH:
            return Target("batch")
        if name == DISCOVER:
            return Target("discover")
        if name == SEARCH:
            return Target("search")
        if name == INSTALL:
            return Target("install")
        if name == RUN:
            return Target("run")
        if name == WAIT:
            return Target("wait")
        if name.startswith(APP_PREFIX):
            return Target("guide", name[len(APP_PREFIX) :])
        if name in self._strict:
            return self._strict[name]
        app_id, colon, tool = name.partition(":")
        if colon and app_id and tool:
            return Target("direct", app_id, tool)
        return None

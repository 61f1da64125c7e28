"""How the gateway's own tools are spelled, in the two spellings `toolNames` chooses between.

`"strict"` (the default) matches `^[a-zA-Z0-9_-]{1,64}$`, the only names many MCP clients accept
(`app_com_apple_mail`, `aai_exec`, `aai_batch`, `aai_run`, `aai_wait`, `aai_search`, `web_discover`); `"seed"`
is the protocol's own (`app:com.apple.mail`, `aai:exec`, `aai:batch`, `aai:run`, `aai:wait`, `aai:search`,
`web:discover`).
Every text an agent reads names the tools in the spelling that is listed, so it lives below everything
that writes such a text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STRICT = "strict"
SEED = "seed"
STYLES = (STRICT, SEED)

SEED_APP_PREFIX = "app:"
SEED_EXEC = "aai:exec"
SEED_BATCH = "aai:batch"
SEED_DISCOVER = "web:discover"
SEED_SEARCH = "aai:search"
SEED_INSTALL = "aai:install"
SEED_RUN = "aai:run"
SEED_WAIT = "aai:wait"
MAX = 64
STRICT_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_NOT_STRICT = re.compile(r"[^a-zA-Z0-9_-]")


def strict(name: str) -> str:
    """`name` with every character a strict name may not hold replaced by `_`, cut to 64 characters."""
    return _NOT_STRICT.sub("_", name)[:MAX]


@dataclass(frozen=True, slots=True)
class Spelling:
    """The names of the gateway's fixed tools in one spelling; `guide_prefix` + an app id names an app's guide
    (in the strict spelling, made strict and, rarely, suffixed against a collision: see `mcp/names.py`)."""

    exec: str
    batch: str
    discover: str
    guide_prefix: str
    search: str
    install: str
    run: str
    wait: str

    def guide_pattern(self) -> str:
        """How the guide tools are named, for texts that speak of all of them."""
        return self.guide_prefix + "<appId>"


SPELLINGS = {
    SEED: Spelling(
        SEED_EXEC, SEED_BATCH, SEED_DISCOVER, SEED_APP_PREFIX, SEED_SEARCH, SEED_INSTALL, SEED_RUN, SEED_WAIT
    ),
    STRICT: Spelling(
        strict(SEED_EXEC),
        strict(SEED_BATCH),
        strict(SEED_DISCOVER),
        strict(SEED_APP_PREFIX),
        strict(SEED_SEARCH),
        strict(SEED_INSTALL),
        strict(SEED_RUN),
        strict(SEED_WAIT),
    ),
}


def spelling(style: str) -> Spelling:
    return SPELLINGS[style]

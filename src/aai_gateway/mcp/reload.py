"""Hot reload: rescan when descriptors change and tell every connected client."""

from __future__ import annotations

import logging
from typing import Protocol

import anyio

from aai_gateway.discovery.watch import watch
from aai_gateway.service import Gateway

log = logging.getLogger(__name__)


class Served(Protocol):
    """What serves the clients: the SDK's server, or a stdio session's front before the SDK is imported."""

    @property
    def gateway(self) -> Gateway: ...

    async def apps_changed(self, app_ids: set[str]) -> None:
        """Tell the clients these apps were added, changed or removed."""


async def keep_fresh(server: Served, stop: anyio.Event | None = None) -> None:
    """Runs until cancelled (set `stop` first, see `watch`). A rescan that fails is logged and the apps
    served stay as they were."""

    async def on_change(reason: str) -> None:
        try:
            changed = server.gateway.rescan()
        except Exception:
            log.exception("rescan after %s failed; the apps served are unchanged", reason)
            return
        for problem in server.gateway.registry.scan.problems:
            log.warning("%s", problem)
        if changed:
            await server.apps_changed(changed)

    await watch(server.gateway.settings, on_change, stop)

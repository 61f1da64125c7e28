"""Hot reload: rescan when descriptors change and tell every connected client."""

from __future__ import annotations

import logging

import anyio

from aai_gateway.discovery.watch import watch
from aai_gateway.mcp.server import GatewayServer

log = logging.getLogger(__name__)


async def keep_fresh(server: GatewayServer, stop: anyio.Event | None = None) -> None:
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

"""The early stdio answers follow the SDK's own protocol versions and capabilities."""

from __future__ import annotations

from pathlib import Path

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from aai_gateway.config import load_settings
from aai_gateway.mcp.server import GatewayServer
from aai_gateway.mcp.wire.early import CAPABILITIES, HANDSHAKE_VERSIONS
from aai_gateway.service import Gateway


def test_versions_are_the_sdks() -> None:
    assert HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    assert HANDSHAKE_VERSIONS[-1] == LATEST_HANDSHAKE_VERSION


def test_capabilities_are_the_servers(tmp_path: Path) -> None:
    settings = load_settings(env={"HOME": str(tmp_path), "AAI_PLATFORM": "linux"})
    server = GatewayServer(Gateway(settings))
    capabilities = server.initialization_options().capabilities
    dumped = capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert dumped.pop("extensions", {}) == {}  # a 2026-era field, not on the handshake era's wire
    assert dumped == CAPABILITIES

"""MCP over streamable HTTP: the path it is served at and the Host and Origin checks of the SDK's transport.

`aai_gateway.http_server` serves it, beside the web UI.
"""

from __future__ import annotations

import socket

from mcp.server.transport_security import TransportSecuritySettings

MCP_PATH = "/mcp"

LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def security(host: str, token_required: bool = False) -> TransportSecuritySettings:
    """Host and Origin checks against DNS rebinding, on whatever address the gateway listens.

    On a wildcard address the names this machine answers to are allowed besides loopback. Where `/mcp`
    requires a bearer token, a page that rebinds a name to the gateway cannot send it (and a browser
    sends no cross-site Authorization header without a CORS answer the gateway never gives), so any Host
    is served: remote clients reach the gateway by whatever address or name they know it by.
    """
    if token_required:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = {host}
    if host in ("0.0.0.0", "::"):  # noqa: S104 - naming the wildcard, not binding to it
        names = {socket.gethostname(), socket.getfqdn()}
    shown = [f"[{n}]" if ":" in n else n for n in sorted(names)]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*LOOPBACK_HOSTS, *(f"{n}:*" for n in shown)],
        allowed_origins=[*LOOPBACK_ORIGINS, *(f"http://{n}:*" for n in shown)],
    )

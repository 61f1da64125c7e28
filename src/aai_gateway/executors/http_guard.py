"""Where web requests may go: https anywhere public; plain http and private networks only when allowed.

Plain http is allowed only to a loopback host (127.0.0.0/8, ::1, localhost) and only when
`web.allowHttpLoopback` is set. Every address a host resolves to is checked: loopback addresses
need `web.allowHttpLoopback` whatever the scheme, other non-public ones (private, link-local,
shared, reserved, multicast) need `web.allowPrivateNetworks`, and the unspecified address is never
reached.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

from aai_gateway.addresses import address_refusal, ip_of
from aai_gateway.config import Settings
from aai_gateway.errors import ApiRequestFailed
from aai_gateway.executors.http_request import Base

PLAIN_HTTP_REFUSED = "plain http is only allowed to loopback addresses when web.allowHttpLoopback is set"
LOOPBACK_NAMES = frozenset({"localhost", "localhost."})

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def check_scheme(base: Base, settings: Settings) -> None:
    if base.scheme == "https":
        return
    if not (settings.web_allow_http_loopback and is_loopback_host(base.host)):
        raise ApiRequestFailed(f"{PLAIN_HTTP_REFUSED} (the API is at {base.origin})")


def is_loopback_host(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return _plain(ipaddress.ip_address(host)).is_loopback
    except ValueError:
        return False


def refusal(address: Address, settings: Settings) -> str | None:
    """Why `address` may not be reached under `settings`, or None when it may (the scheme is checked apart)."""
    return address_refusal(
        str(address),
        scheme="https",
        allow_loopback=settings.web_allow_http_loopback,
        allow_private=settings.web_allow_private_networks,
    )


async def check_host(base: Base, settings: Settings) -> None:
    """Resolve the base URL's host and refuse it unless every address it resolves to may be reached.

    A host that is an IP address is judged as it is, without a trip through the resolver's thread.
    """
    literal = ip_of(base.host)
    if literal is not None:
        addresses = [literal]
    else:
        addresses = await _resolve(base)
    for address in addresses:
        reason = refusal(address, settings)
        if reason:
            raise ApiRequestFailed(f"{base.host} resolves to {address}, which {reason}")


async def _resolve(base: Base) -> list[Address]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(base.host, base.effective_port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ApiRequestFailed(f"cannot resolve {base.host}: {exc}") from None
    return [ipaddress.ip_address(str(sockaddr[0]).partition("%")[0]) for *_, sockaddr in infos]


def _plain(address: Address) -> Address:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address

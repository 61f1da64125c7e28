"""Which network addresses the gateway connects to, for web descriptors and web APIs alike."""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def address_refusal(address: str, *, scheme: str, allow_loopback: bool, allow_private: bool) -> str | None:
    """Why the gateway will not connect to `address` for a `scheme` URL, or None when it may.

    Never: the unspecified address (0.0.0.0, ::, which reach this machine) and multicast. Loopback only
    with web.allowHttpLoopback (https or http). Plain http only to loopback. Every other address that
    is not globally routable (private, link-local, shared, reserved, documentation ranges) only with
    web.allowPrivateNetworks. IPv4 addresses mapped into IPv6 are judged as the IPv4 address.
    """
    ip = ip_of(address)
    if ip is None:
        return "is not an IP address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_unspecified:
        return "is the unspecified address, which is never fetched"
    if ip.is_multicast:
        return "is a multicast address, which is never fetched"
    if ip.is_loopback:
        if allow_loopback:
            return None
        return "is a loopback address, refused unless web.allowHttpLoopback is set in config.json"
    if scheme != "https":
        return "is not a loopback address, and plain http is allowed only to loopback; use https"
    if ip.is_global or allow_private:
        return None
    kind = "link-local" if ip.is_link_local else "reserved" if ip.is_reserved else "private"
    return f"is a {kind} address, refused unless web.allowPrivateNetworks is set in config.json"


def ip_of(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None

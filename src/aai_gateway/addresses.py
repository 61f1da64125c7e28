"""Which network addresses the gateway connects to, for web descriptors and web APIs alike."""

from __future__ import annotations

import ipaddress
from functools import partial

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
COMPATIBLE = ipaddress.IPv6Network("::/96")
SIXTOFOUR = ipaddress.IPv6Network("2002::/16")
TEREDO = ipaddress.IPv6Network("2001::/32")
LOCAL_NAT64_PREFIXES = (48, 56, 64, 96)
"""RFC 6052 prefix lengths a local-use NAT64 prefix inside 64:ff9b:1::/48 may have; the address does not say which."""


def address_refusal(address: str, *, scheme: str, allow_loopback: bool, allow_private: bool) -> str | None:
    """Why the gateway will not connect to `address` for a `scheme` URL, or None when it may.

    Never: the unspecified address (0.0.0.0, ::, which reach this machine) and multicast. Loopback only
    with web.allowHttpLoopback (https or http). Plain http only to loopback. Every other address that
    is not globally routable (private, link-local, shared, reserved, documentation ranges) only with
    web.allowPrivateNetworks. IPv4 addresses mapped into IPv6 are judged as the IPv4 address; every other IPv6
    form that carries an IPv4 address (IPv4-compatible, NAT64, 6to4, Teredo's client) is judged by that address too.
    """
    ip = ip_of(address)
    if ip is None:
        return "is not an IP address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in LOCAL_NAT64:
            return _local_nat64_refusal(ip, scheme, allow_loopback=allow_loopback, allow_private=allow_private)
        embedded, translated = embedded_ipv4(ip)
        for inner in embedded:
            reason = address_refusal(
                str(inner), scheme=scheme, allow_loopback=allow_loopback, allow_private=allow_private
            )
            if reason:
                return f"embeds the IPv4 address {inner}, {reason.removeprefix('is ')}"
        if translated and scheme == "https":
            return None
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


def embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[list[ipaddress.IPv4Address], bool]:
    """The IPv4 addresses `ip` carries, and whether it is a plain translation (the IPv4 address is where it goes)."""
    if ip in NAT64 or (ip in COMPATIBLE and int(ip) > 1):
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)], True
    if ip in SIXTOFOUR and ip.sixtofour is not None:
        return [ip.sixtofour], True
    if ip in TEREDO and ip.teredo is not None:
        return [ip.teredo[1]], False
    return [], False


def _local_nat64_refusal(
    ip: ipaddress.IPv6Address, scheme: str, *, allow_loopback: bool, allow_private: bool
) -> str | None:
    """A local-use NAT64 address reaches a network of its operator's choosing: private, and loopback if any reading of
    its IPv4 address is."""
    loopback = next((a for a in map(partial(_rfc6052, ip), LOCAL_NAT64_PREFIXES) if a.is_loopback), None)
    if loopback is not None and not allow_loopback:
        why = "a loopback address, refused unless web.allowHttpLoopback is set in config.json"
        return f"embeds the IPv4 address {loopback}, {why}"
    if scheme != "https":
        return "is not a loopback address, and plain http is allowed only to loopback; use https"
    if not allow_private:
        return "is a local-use NAT64 address, refused unless web.allowPrivateNetworks is set in config.json"
    return None


def _rfc6052(ip: ipaddress.IPv6Address, prefix: int) -> ipaddress.IPv4Address:
    """The IPv4 address after a `prefix`-bit NAT64 prefix (RFC 6052 section 2.2: bits 64 to 71 are always zero)."""
    bits = int(ip)
    without_u = ((bits >> 64) << 56) | (bits & ((1 << 56) - 1))
    start = prefix if prefix <= 64 else prefix - 8
    return ipaddress.IPv4Address((without_u >> (120 - start - 32)) & 0xFFFFFFFF)

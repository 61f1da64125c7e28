"""IPv6 addresses that carry an IPv4 address (mapped, IPv4-compatible, NAT64, 6to4, Teredo) are judged by the IPv4
address they reach: asked of the guard directly, no network. Each row is one hostile input."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from aai_gateway.config import Settings
from aai_gateway.errors import ApiRequestFailed
from aai_gateway.executors.http_guard import check_host, refusal
from aai_gateway.executors.http_request import split_base


def settings(*, loopback: bool = False, private: bool = False) -> Settings:
    return Settings(
        scan_paths=(),
        platform="linux",
        web_allow_http_loopback=loopback,
        web_allow_private_networks=private,
        apps={},
        aai_home=Path("/home/u/.aai"),
    )


def teredo(client: str) -> str:
    """A Teredo address (server 65.54.227.120) whose client is `client`, obfuscated as RFC 4380 says."""
    obfuscated = int(ipaddress.IPv4Address(client)) ^ 0xFFFFFFFF
    return str(ipaddress.IPv6Address((0x20010000_4136E378 << 64) | (0x8000_63BF << 32) | obfuscated))


# address, the words of the refusal with no option set ("" = reachable), whether allowPrivateNetworks lets it through
CORPUS: list[tuple[str, str, bool]] = [
    # NAT64, well-known prefix (RFC 6052)
    ("64:ff9b::a9fe:a9fe", "169.254.169.254, a link-local", True),
    ("64:ff9b::7f00:1", "127.0.0.1, a loopback", False),
    ("64:ff9b::a00:1", "10.0.0.1, a private", True),
    ("64:ff9b::c0a8:101", "192.168.1.1, a private", True),
    ("64:ff9b::ac10:1", "172.16.0.1, a private", True),
    ("64:ff9b::6440:1", "100.64.0.1", True),
    ("64:ff9b::", "0.0.0.0, the unspecified", False),
    ("64:ff9b::808:808", "", True),
    # NAT64, local-use prefix (RFC 8215): the operator's own network
    ("64:ff9b:1::a9fe:a9fe", "local-use NAT64", True),
    ("64:ff9b:1::7f00:1", "127.0.0.1, a loopback", False),
    ("64:ff9b:1:7f00:0:100::", "127.0.0.1, a loopback", False),
    ("64:ff9b:1:808:8:800::", "local-use NAT64", True),
    # 6to4 (RFC 3056)
    ("2002:a9fe:a9fe::1", "169.254.169.254, a link-local", True),
    ("2002:7f00:1::1", "127.0.0.1, a loopback", False),
    ("2002:a00:1::", "10.0.0.1, a private", True),
    ("2002:c0a8:101:1::1", "192.168.1.1, a private", True),
    ("2002:808:808::1", "", True),
    # IPv4-compatible (deprecated, still parsed)
    ("::127.0.0.1", "127.0.0.1, a loopback", False),
    ("::7f00:1", "127.0.0.1, a loopback", False),
    ("::169.254.169.254", "169.254.169.254, a link-local", True),
    ("::10.0.0.1", "10.0.0.1, a private", True),
    ("::8.8.8.8", "", True),
    # IPv4-mapped
    ("::ffff:127.0.0.1", "loopback", False),
    ("::ffff:169.254.169.254", "link-local", True),
    ("::ffff:a9fe:a9fe", "link-local", True),
    ("::ffff:10.0.0.1", "private", True),
    ("::ffff:0.0.0.0", "unspecified", False),
    # Teredo (RFC 4380): the client's IPv4 address is stored inverted
    (teredo("127.0.0.1"), "127.0.0.1, a loopback", False),
    (teredo("169.254.169.254"), "169.254.169.254, a link-local", True),
    (teredo("192.168.1.1"), "192.168.1.1, a private", True),
    (teredo("8.8.8.8"), "private", True),
    # plain forms, for contrast
    ("::1", "loopback", False),
    ("fe80::1", "link-local", True),
    ("fd00::1", "private", True),
    ("2606:4700:4700::1111", "", True),
]


@pytest.mark.hostile("address-guard")
@pytest.mark.parametrize(("address", "words", "private_passes"), CORPUS, ids=[c[0] for c in CORPUS])
def test_embedded_ipv4_addresses_are_judged_as_themselves(address: str, words: str, private_passes: bool) -> None:
    ip = ipaddress.ip_address(address)
    strict = refusal(ip, settings())
    if words:
        assert strict is not None, address
        assert words in strict
    else:
        assert strict is None, strict
    lenient = refusal(ip, settings(private=True))
    assert (lenient is None) == private_passes, lenient


@pytest.mark.hostile("address-guard")
@pytest.mark.parametrize("address", ["::127.0.0.1", "2002:7f00:1::1", "64:ff9b::7f00:1", teredo("127.0.0.1")])
def test_embedded_loopback_passes_only_with_loopback_allowed(address: str) -> None:
    assert refusal(ipaddress.ip_address(address), settings(loopback=True, private=True)) is None


@pytest.mark.anyio
@pytest.mark.hostile("address-guard")
@pytest.mark.parametrize("host", ["[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::1]", "[::169.254.169.254]"])
async def test_a_url_with_an_embedding_literal_is_refused(host: str) -> None:
    with pytest.raises(ApiRequestFailed, match=r"169\.254\.169\.254, a link-local"):
        await check_host(split_base(f"https://{host}/latest/meta-data"), settings())

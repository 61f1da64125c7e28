"""Web sites as the gateway sees them: what an agent typed → a `Site`, which URLs belong to it, which
addresses it may be reached at. Pure functions; the network is in `wellknown.py`.

A **site** is a scheme, a host (lowercase ASCII, IDNA-encoded; an IPv6 address without brackets) and a
port. Its descriptor lives at `<origin>/.well-known/aai.json` (RFC 8615: always at the root, whatever
path the agent gave).

A URL **belongs to a site** when it is an absolute URL without user name or password, with the site's
scheme and port, and a host that is the site's host or a subdomain of it (`api.example.com` and
`a.b.example.com` belong to `https://example.com`; `example.com` does not belong to
`https://api.example.com`, and nothing but the address itself belongs to a site whose host is an IP
address). Nothing looser (no "registrable domain" guessing) is accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from aai_gateway.addresses import ip_of as _ip
from aai_gateway.errors import InvalidParams

DEFAULT_PORTS = {"https": 443, "http": 80}
WELL_KNOWN = "/.well-known/aai.json"

_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
_LABEL = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?")


@dataclass(frozen=True, slots=True)
class Site:
    scheme: str
    host: str
    port: int

    @property
    def is_ip(self) -> bool:
        return _ip(self.host) is not None

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.netloc}"

    @property
    def well_known_url(self) -> str:
        return self.origin + WELL_KNOWN

    @property
    def cache_key(self) -> str:
        """The cache folder's name: `host`, or `host_port` for a port other than the scheme's default.

        IPv6 colons become dashes (a dotless name other than `localhost` is never a site, so this
        cannot collide with a host name).
        """
        host = self.host.replace(":", "-")
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}_{self.port}"


def parse_site(text: str) -> Site:
    """Normalise what an agent gave web:discover (a URL, a domain, a domain with a path) into a site.

    No scheme means https. A bare name (`notion`) is refused: the gateway does not guess domains.
    Raises `InvalidParams` with a sentence saying what to give instead.
    """
    raw = text.strip()
    hint = "give the web app's domain (e.g. notion.com) or URL (e.g. https://api.notion.com)"
    if not raw:
        raise InvalidParams(f"the url is empty; {hint}")
    if any(c.isspace() or c == "\\" or ord(c) < 0x20 for c in raw):
        raise InvalidParams(f"'{text}' is not a domain or URL (it holds spaces or backslashes); {hint}")
    match = _SCHEME.match(raw)
    if match and match.group(1).lower() not in DEFAULT_PORTS:
        raise InvalidParams(f"'{text}' is not a web URL (scheme '{match.group(1)}'); {hint}")
    if not match and re.match(r"^https?:", raw, re.IGNORECASE):
        raise InvalidParams(f"'{text}' is not a valid URL (write it as https://host/...); {hint}")
    url = raw if match else "https://" + raw
    if "@" in re.split(r"[/?#]", url.split("://", 1)[1], maxsplit=1)[0]:
        raise InvalidParams(f"'{text}' holds a user name or password, which the gateway does not send; {hint}")
    site = url_site(url)
    if site is None:
        raise InvalidParams(f"'{text}' is not a valid domain or URL; {hint}")
    if "." not in site.host and site.host != "localhost" and not site.is_ip:
        raise InvalidParams(f"'{text}' is a name, not a domain or URL; {hint}")
    return site


def url_site(url: str) -> Site | None:
    """The site of an absolute http(s) URL, or None when it is not one (or has a user name or password)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or "@" in parts.netloc or not parts.hostname:
        return None
    host = canonical_host(parts.hostname)
    if host is None or port == 0:
        return None
    return Site(scheme, host, DEFAULT_PORTS[scheme] if port is None else port)


def canonical_host(host: str) -> str | None:
    """Lowercase ASCII host (IDNA for Unicode names, no trailing dot), a compressed IP, or None."""
    address = _ip(host)
    if address is not None:
        return address.compressed
    try:
        ascii_host = host.rstrip(".").encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    labels = ascii_host.split(".")
    if len(ascii_host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        return None
    return ascii_host


def belongs(url: object, site: Site) -> bool:
    """Whether `url` belongs to `site` (see the module docstring for the rule)."""
    other = url_site(url) if isinstance(url, str) else None
    if other is None or other.scheme != site.scheme or other.port != site.port:
        return False
    if other.host == site.host:
        return True
    return not site.is_ip and not other.is_ip and other.host.endswith("." + site.host)

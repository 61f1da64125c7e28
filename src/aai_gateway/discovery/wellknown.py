"""web:discover (seed 004): a URL, domain or name → a site → `/.well-known/aai.json`, checked and cached.

The rules, each refusal an `AaiError` with a plain detail:

- **Input** (`sites.parse_site`): no scheme means https; a bare name is refused (INVALID_PARAMS).
- **Scheme**: https. Plain http only with `web.allowHttpLoopback`, and only to loopback addresses.
- **Addresses** (`addresses.address_refusal`): the host is resolved with the running loop's getaddrinfo and
  every address must pass, else PERMISSION_DENIED. The connection then goes to the checked address
  (TLS still verifies the certificate for the host name), so a second DNS answer cannot move it.
  Proxies from the environment are not used, since a proxy would resolve the name itself.
- **Redirects**: followed only to the same scheme, host and port, at most 3; another origin is
  PERMISSION_DENIED.
- **Size and time**: at most `maxDescriptorBytes` (streamed, after decompression), all within
  `web.timeout` seconds. Too large is AAI_JSON_INVALID; network failures, timeouts and error statuses
  are API_REQUEST_FAILED; 404 and 410 are APP_NOT_FOUND (the site publishes no descriptor).
- **Descriptor**: valid (`check_bytes`; the first problem is reported, AAI_JSON_INVALID), with a `web`
  binding; only that binding is kept, so a site can never make the gateway run local automation.
  Its `base_url`, every auth URL (keys ending in `url`, `uri` or `endpoint`) and every tool endpoint
  or path (resolved against `base_url`) must belong to the site (`sites.belongs`: same scheme and port,
  the same host or a subdomain of it), else PERMISSION_DENIED.
- **Cache** (`webcache`): a fresh entry is used without any network; a stale or broken one is fetched
  again; when that fetch fails (network, status, timeout, an invalid new descriptor) and the cached copy
  is still valid, the copy is served and a warning logged. Policy refusals are never papered over.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from aai_gateway import __version__
from aai_gateway.addresses import address_refusal
from aai_gateway.config import Settings
from aai_gateway.descriptor import Binding, Descriptor
from aai_gateway.descriptor.validate import check_bytes
from aai_gateway.discovery import webcache
from aai_gateway.discovery.sites import Site, belongs, parse_site, url_site
from aai_gateway.errors import AaiJsonInvalid, ApiRequestFailed, AppNotFound, InvalidParams, PermissionDenied

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger(__name__)

MAX_REDIRECTS = 3
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
URL_KEY_ENDINGS = ("url", "uri", "endpoint")


@dataclass(frozen=True, slots=True)
class WebApp:
    site: Site
    descriptor: Descriptor
    """The descriptor with its `web` binding only; `source` is the site's `.well-known/aai.json` URL."""
    fetched_at: float
    from_cache: bool = False


async def discover(
    text: str,
    settings: Settings,
    *,
    client: httpx2.AsyncClient | None = None,
    clock: Callable[[], float] = time.time,
) -> WebApp:
    """The web app at the site `text` names, from the cache when fresh, else fetched (see module doc)."""
    site = parse_site(text)
    check_scheme(site, settings)
    cached, fetched_at = _cached(site, settings)
    if cached is not None and webcache.is_fresh(fetched_at, clock(), settings.web_cache_ttl_hours):
        return WebApp(site, cached, fetched_at, from_cache=True)
    try:
        data = await fetch(site, settings, client)
        app = accept(data, site)
    except (ApiRequestFailed, AppNotFound, AaiJsonInvalid) as exc:
        if cached is None:
            raise
        age = (clock() - fetched_at) / 3600
        log.warning("serving the cached %s (%.1f h old): fetching it again failed: %s", site.well_known_url, age, exc)
        return WebApp(site, cached, fetched_at, from_cache=True)
    now = clock()
    meta = webcache.Meta(site.well_known_url, now, settings.web_cache_ttl_hours, webcache.digest(data))
    webcache.write(settings.cache_dir, site, data, meta)
    return WebApp(site, app, now)


def _cached(site: Site, settings: Settings) -> tuple[Descriptor | None, float]:
    """The valid cached descriptor of `site` and when it was fetched; a broken entry is logged and ignored."""
    entry, why = webcache.read(settings.cache_dir, site, settings.max_descriptor_bytes)
    if entry is not None:
        try:
            return accept(entry.data, site), entry.meta.fetched_at
        except (AaiJsonInvalid, PermissionDenied) as exc:
            why = exc.detail
    if why:
        log.info("the cached %s is broken (%s); fetching it again", site.well_known_url, why)
    return None, 0.0


def check_scheme(site: Site, settings: Settings) -> None:
    if site.scheme == "http" and not settings.web_allow_http_loopback:
        raise PermissionDenied(
            f"{site.origin} uses plain http, which is refused; use https "
            "(plain http is allowed only to 127.0.0.1 or ::1, and only when web.allowHttpLoopback is set)"
        )


def accept(data: bytes, site: Site) -> Descriptor:
    """Check fetched bytes as the descriptor of `site`; return it with its `web` binding only."""
    url = site.well_known_url
    loaded = check_bytes(data, url)
    if loaded.descriptor is None:
        errors = [p for p in loaded.problems if p.severity == "error"]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise AaiJsonInvalid(f"{errors[0] if errors else url + ': cannot be read'}{more}")
    app = loaded.descriptor
    web = app.bindings.get("web")
    if web is None:
        raise AaiJsonInvalid(
            f'the descriptor at {url} ({app.app_id}) has no web binding (platforms.web, or platform "web"), '
            f"so it cannot be used as a web app (it has {', '.join(app.bindings)})"
        )
    foreign = next(foreign_urls(web, site), None)
    if foreign is not None:
        where, value = foreign
        raise PermissionDenied(
            f"the descriptor at {url} gives {where} = {value!r}, which is not part of {site.origin}; "
            "a web app's URLs must use its own host (or a subdomain of it), scheme and port"
        )
    return replace(app, bindings={"web": web})


def foreign_urls(binding: Binding, site: Site) -> Iterator[tuple[str, Any]]:
    """Every URL of a web binding that does not belong to `site`, with where it is written."""
    base = binding.options.get("base_url")
    if not belongs(base, site):
        yield "base_url", base
        return
    assert isinstance(base, str)
    yield from _foreign_auth_urls(binding.auth or {}, "auth", site)
    for tool in binding.tools:
        for key in ("endpoint", "path"):
            value = tool.options.get(key)
            if isinstance(value, str) and not belongs(urljoin(base.rstrip("/") + "/", value), site):
                yield f"tools[{tool.name}].{key}", value


def _foreign_auth_urls(auth: Mapping[str, Any], where: str, site: Site) -> Iterator[tuple[str, Any]]:
    for key, value in auth.items():
        if isinstance(value, Mapping):
            yield from _foreign_auth_urls(value, f"{where}.{key}", site)
        elif str(key).lower().endswith(URL_KEY_ENDINGS) and not belongs(value, site):
            yield f"{where}.{key}", value


async def fetch(site: Site, settings: Settings, client: httpx2.AsyncClient | None = None) -> bytes:
    """The bytes of `site`'s `.well-known/aai.json`, under the address, redirect, size and time rules."""
    return await _fetch(site, site.well_known_url, settings, client)


async def fetch_url(url: str, settings: Settings, limit: int | None = None) -> bytes:
    """The bytes at any http(s) URL (a store index, a descriptor), under the same rules as `fetch`; at most
    `limit` bytes (by default maxDescriptorBytes)."""
    site = url_site(url)
    if site is None:
        raise InvalidParams(f"{url!r} is not an https URL (without a user name or password)")
    check_scheme(site, settings)
    return await _fetch(site, url, settings, None, limit)


def url_fetcher(settings: Settings) -> Callable[[str, int], Awaitable[bytes]]:
    """`fetch_url` under `settings`, as the library's stores and installs take it: (url, limit)."""

    async def fetch(url: str, limit: int) -> bytes:
        return await fetch_url(url, settings, limit)

    return fetch


async def _fetch(
    site: Site, url: str, settings: Settings, client: httpx2.AsyncClient | None, limit: int | None = None
) -> bytes:
    import httpx2  # noqa: PLC0415 - here, not on top: the command starts without the HTTP stack (~25 ms)

    cap = settings.max_descriptor_bytes if limit is None else limit
    try:
        async with asyncio.timeout(settings.web_timeout):
            addresses = await resolve(site, settings)
            if client is not None:
                return await _follow(client, site, addresses, cap, url)
            async with httpx2.AsyncClient(follow_redirects=False, timeout=settings.web_timeout, trust_env=False) as own:
                return await _follow(own, site, addresses, cap, url)
    except (TimeoutError, httpx2.TimeoutException):
        raise ApiRequestFailed(f"{url} did not answer within {settings.web_timeout:g} s (web.timeout)") from None


async def resolve(site: Site, settings: Settings) -> list[str]:
    """The host's addresses, each checked by `address_refusal`; PERMISSION_DENIED names the first refused."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(site.host, site.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ApiRequestFailed(f"cannot resolve {site.host}: {reason}") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise ApiRequestFailed(f"cannot resolve {site.host}: no addresses")
    for address in addresses:
        refusal = address_refusal(
            address,
            scheme=site.scheme,
            allow_loopback=settings.web_allow_http_loopback,
            allow_private=settings.web_allow_private_networks,
        )
        if refusal is not None:
            shown = f"{site.host} resolves to {address}, which" if address != site.host else f"{address}"
            raise PermissionDenied(f"{site.origin} is refused: {shown} {refusal}")
    return addresses


async def _follow(client: httpx2.AsyncClient, site: Site, addresses: list[str], cap: int, start: str) -> bytes:
    url = start
    for _ in range(MAX_REDIRECTS + 1):
        response = await _send(client, site, addresses, url)
        try:
            if response.status_code in REDIRECT_STATUSES and "location" in response.headers:
                target = urljoin(url, response.headers["location"])
                if url_site(target) != site:
                    raise PermissionDenied(
                        f"{url} redirects to {target}, another site; redirects are followed only within {site.origin}"
                    )
                url = target
                continue
            if response.status_code in (404, 410) and start == site.well_known_url:
                raise AppNotFound(f"{site.origin} publishes no aai.json: {url} answered HTTP {response.status_code}")
            if not 200 <= response.status_code < 300:
                raise ApiRequestFailed(f"{url} answered HTTP {response.status_code} {response.reason_phrase}".rstrip())
            return await _read(response, url, cap)
        finally:
            await response.aclose()
    raise ApiRequestFailed(f"{start} redirects more than {MAX_REDIRECTS} times")


async def _send(client: httpx2.AsyncClient, site: Site, addresses: list[str], url: str) -> httpx2.Response:
    """GET `url` from the first checked address that accepts a connection."""
    import httpx2  # noqa: PLC0415 - see _fetch

    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    extensions = {"sni_hostname": site.host} if site.scheme == "https" and not site.is_ip else {}
    headers = {"Host": site.netloc, "Accept": "application/json", "User-Agent": f"aai-gateway/{__version__}"}
    failure: Exception | None = None
    for address in addresses:
        host = f"[{address}]" if ":" in address else address
        request = client.build_request(
            "GET", f"{site.scheme}://{host}:{site.port}{path}", headers=headers, extensions=extensions
        )
        try:
            return await client.send(request, stream=True, follow_redirects=False)
        except httpx2.ConnectError as exc:
            failure = exc
        except httpx2.TimeoutException:
            raise
        except httpx2.HTTPError as exc:
            raise ApiRequestFailed(f"{url} failed: {exc or type(exc).__name__}") from None
    raise ApiRequestFailed(f"cannot connect to {site.netloc}: {failure or 'no address'}")


async def _read(response: httpx2.Response, url: str, cap: int) -> bytes:
    import httpx2  # noqa: PLC0415 - see _fetch

    too_big = f"{url} is larger than the {_size(cap)} limit (maxDescriptorBytes)"
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > cap:
        raise AaiJsonInvalid(too_big)
    chunks: list[bytes] = []
    total = 0
    try:
        async for chunk in response.aiter_bytes():
            total += len(chunk)
            if total > cap:
                raise AaiJsonInvalid(too_big)
            chunks.append(chunk)
    except httpx2.TimeoutException:
        raise
    except httpx2.HTTPError as exc:
        raise ApiRequestFailed(f"reading {url} failed: {exc or type(exc).__name__}") from None
    return b"".join(chunks)


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} bytes"

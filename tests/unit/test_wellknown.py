"""web:discover's pure parts: input normalisation, the address policy, which URLs belong to a site, the
descriptor checks, and the cache's freshness under a fake clock (the network is a mock transport)."""

from __future__ import annotations

import copy
import json
import logging
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest

from aai_gateway.addresses import address_refusal
from aai_gateway.config import Settings
from aai_gateway.discovery import webcache
from aai_gateway.discovery.sites import Site, belongs, parse_site
from aai_gateway.discovery.webapps import WebApps
from aai_gateway.discovery.wellknown import WebApp, accept, discover
from aai_gateway.errors import AaiJsonInvalid, ApiRequestFailed, InvalidParams, PermissionDenied

HOUR = 3600.0


@pytest.mark.parametrize(
    ("text", "origin", "cache_key"),
    [
        ("notion.com", "https://notion.com", "notion.com"),
        ("  notion.com  ", "https://notion.com", "notion.com"),
        ("api.example.com/v1", "https://api.example.com", "api.example.com"),
        ("https://x.y", "https://x.y", "x.y"),
        ("HTTP://localhost:8080", "http://localhost:8080", "localhost_8080"),
        ("HTTPS://API.Example.COM./v1/?q=1#top", "https://api.example.com", "api.example.com"),
        ("https://example.com:443/", "https://example.com", "example.com"),
        ("http://example.com:80", "http://example.com", "example.com"),
        ("example.com:8443", "https://example.com:8443", "example.com_8443"),
        ("127.0.0.1:8080", "https://127.0.0.1:8080", "127.0.0.1_8080"),
        ("http://[::1]:8080/x", "http://[::1]:8080", "--1_8080"),
        ("localhost", "https://localhost", "localhost"),
        ("münchen.de", "https://xn--mnchen-3ya.de", "xn--mnchen-3ya.de"),
    ],
)
def test_inputs_normalise_to_a_site(text: str, origin: str, cache_key: str) -> None:
    site = parse_site(text)
    assert (site.origin, site.cache_key) == (origin, cache_key)
    assert site.well_known_url == origin + "/.well-known/aai.json"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("notion", "is a name, not a domain or URL; give the web app's domain (e.g. notion.com) or URL"),
        ("Notion", "is a name, not a domain or URL"),
        ("", "the url is empty"),
        ("   ", "the url is empty"),
        ("ftp://example.com", "is not a web URL (scheme 'ftp')"),
        ("file:///etc/passwd", "is not a web URL (scheme 'file')"),
        ("javascript:alert(1)", "is not a valid domain or URL"),
        ("https:/example.com", "write it as https://host"),
        ("https://user:pw@example.com", "holds a user name or password"),
        ("user@example.com", "holds a user name or password"),
        ("example .com", "holds spaces or backslashes"),
        ("https://example.com\\@evil.com", "holds spaces or backslashes"),
        ("example.com:0", "is not a valid domain or URL"),
        ("example.com:99999", "is not a valid domain or URL"),
        ("..", "is not a valid domain or URL"),
        ("a..b", "is not a valid domain or URL"),
        ("https://[::1", "is not a valid domain or URL"),
        ("-bad-.com", "is not a valid domain or URL"),
    ],
)
def test_bad_inputs_are_refused_with_what_to_give(text: str, says: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        parse_site(text)
    assert says in caught.value.detail


LOOPBACK_ONLY = {"allow_loopback": True, "allow_private": False}
NOTHING = {"allow_loopback": False, "allow_private": False}
PRIVATE_ONLY = {"allow_loopback": False, "allow_private": True}
BOTH = {"allow_loopback": True, "allow_private": True}


@pytest.mark.parametrize(
    ("address", "scheme", "flags", "refused"),
    [
        ("93.184.215.14", "https", NOTHING, None),
        ("2606:4700::1111", "https", NOTHING, None),
        ("93.184.215.14", "http", BOTH, "plain http is allowed only to loopback"),
        ("127.0.0.1", "https", NOTHING, "loopback address, refused unless web.allowHttpLoopback"),
        ("127.0.0.1", "http", NOTHING, "loopback address"),
        ("127.0.0.1", "http", PRIVATE_ONLY, "loopback address"),
        ("127.0.0.1", "http", LOOPBACK_ONLY, None),
        ("127.8.9.10", "https", LOOPBACK_ONLY, None),
        ("::1", "http", LOOPBACK_ONLY, None),
        ("::ffff:127.0.0.1", "http", NOTHING, "loopback address"),
        ("::ffff:127.0.0.1", "http", LOOPBACK_ONLY, None),
        ("::ffff:10.0.0.1", "https", NOTHING, "private address"),
        ("10.1.2.3", "https", NOTHING, "private address, refused unless web.allowPrivateNetworks"),
        ("172.16.0.1", "https", LOOPBACK_ONLY, "private address"),
        ("192.168.1.1", "https", NOTHING, "private address"),
        ("192.168.1.1", "https", PRIVATE_ONLY, None),
        ("192.168.1.1", "http", BOTH, "plain http is allowed only to loopback"),
        ("100.64.0.1", "https", NOTHING, "private address"),
        ("fd00::1", "https", NOTHING, "private address"),
        ("169.254.169.254", "https", NOTHING, "link-local address"),
        ("169.254.169.254", "https", PRIVATE_ONLY, None),
        ("fe80::1%eth0", "https", NOTHING, "link-local address"),
        ("240.0.0.1", "https", NOTHING, "reserved address"),
        ("0.0.0.0", "https", BOTH, "unspecified address"),  # noqa: S104
        ("::", "http", BOTH, "unspecified address"),
        ("224.0.0.1", "https", BOTH, "multicast address"),
        ("ff02::1", "https", BOTH, "multicast address"),
        ("not-an-ip", "https", BOTH, "is not an IP address"),
    ],
)
def test_address_policy(address: str, scheme: str, flags: dict[str, bool], refused: str | None) -> None:
    reason = address_refusal(address, scheme=scheme, **flags)
    if refused is None:
        assert reason is None
    else:
        assert reason is not None
        assert refused in reason


EXAMPLE = Site("https", "example.com", 443)
API = Site("https", "api.example.com", 443)
LOCAL = Site("http", "127.0.0.1", 8080)


@pytest.mark.parametrize(
    ("url", "site", "ok"),
    [
        ("https://example.com/v1", EXAMPLE, True),
        ("https://EXAMPLE.com:443", EXAMPLE, True),
        ("https://api.example.com/v1", EXAMPLE, True),
        ("https://a.b.example.com", EXAMPLE, True),
        ("https://example.com/oauth/token", API, False),
        ("https://other.example.com", API, False),
        ("https://notexample.com", EXAMPLE, False),
        ("https://example.com.evil.com", EXAMPLE, False),
        ("https://evil.com/https://example.com", EXAMPLE, False),
        ("https://example.com@evil.com", EXAMPLE, False),
        ("https://example.com:8443", EXAMPLE, False),
        ("https://api.example.com:8443", EXAMPLE, False),
        ("http://example.com", EXAMPLE, False),
        ("//example.com/x", EXAMPLE, False),
        ("/relative", EXAMPLE, False),
        ("", EXAMPLE, False),
        (None, EXAMPLE, False),
        (42, EXAMPLE, False),
        ("http://127.0.0.1:8080/api", LOCAL, True),
        ("http://127.0.0.1:8081/api", LOCAL, False),
        ("http://localhost:8080/api", LOCAL, False),
        ("http://x.127.0.0.1:8080/api", LOCAL, False),
        ("https://127.0.0.1:8080/api", LOCAL, False),
    ],
)
def test_what_belongs_to_a_site(url: Any, site: Site, ok: bool) -> None:
    assert belongs(url, site) is ok


def web_descriptor(base_url: str, auth: dict[str, str] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": "1.0",
        "appId": "com.example.tasks",
        "name": "Tasks|任务",
        "description": "A hosted task list",
        "platforms": {
            "web": {
                "automation": "restapi",
                "base_url": base_url,
                "auth": {"type": "oauth2", **auth} if auth else {"type": "none"},
                "tools": [
                    {
                        "name": "list_tasks",
                        "description": "List tasks",
                        "parameters": {"type": "object", "properties": {}},
                        "endpoint": "/tasks",
                        "method": "GET",
                    }
                ],
            },
            "linux": {
                "automation": "dbus",
                "service": "org.freedesktop.DBus",
                "object": "/org/freedesktop/DBus",
                "interface": "org.freedesktop.DBus",
                "tools": [
                    {
                        "name": "list_names",
                        "description": "List bus names",
                        "parameters": {"type": "object", "properties": {}},
                        "method": "ListNames",
                    }
                ],
            },
        },
    }
    return doc


def as_bytes(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()


def camel_descriptor(base_url: str, authorize: str, token: str) -> dict[str, Any]:
    return {
        "schemaVersion": "1.0",
        "version": "1.0.0",
        "platform": "web",
        "app": {"id": "com.example.tasks", "name": {"en": "Tasks"}, "defaultLang": "en", "description": "Tasks"},
        "execution": {"type": "http", "baseUrl": base_url},
        "auth": {"type": "oauth2", "oauth2": {"authorizationEndpoint": authorize, "tokenEndpoint": token}},
        "tools": [
            {
                "name": "list_tasks",
                "description": "List tasks",
                "inputSchema": {"type": "object", "properties": {}},
                "execution": {"path": "/tasks", "method": "GET"},
            }
        ],
    }


def test_a_site_gets_its_web_binding_only() -> None:
    app = accept(as_bytes(web_descriptor("https://api.example.com/v1")), EXAMPLE)
    assert list(app.bindings) == ["web"]
    assert app.source == "https://example.com/.well-known/aai.json"
    assert [t.name for _, t in app.tools("linux")] == ["list_tasks"]


def test_auth_endpoints_on_the_site_or_below_are_accepted() -> None:
    doc = web_descriptor(
        "https://api.example.com", {"auth_url": "https://example.com/a", "token_url": "https://id.example.com/t"}
    )
    accept(as_bytes(doc), EXAMPLE)
    accept(
        as_bytes(camel_descriptor("https://example.com/v2", "https://example.com/a", "https://example.com/t")), EXAMPLE
    )


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        (web_descriptor("https://evil.com/v1"), "base_url = 'https://evil.com/v1'"),
        (web_descriptor("https://example.com:8443"), "base_url"),
        (web_descriptor("http://example.com"), "base_url"),
        (
            web_descriptor(
                "https://example.com", {"auth_url": "https://example.com/a", "token_url": "https://evil.com/t"}
            ),
            "auth.token_url = 'https://evil.com/t'",
        ),
        (
            camel_descriptor("https://example.com", "https://evil.com/a", "https://example.com/t"),
            "auth.oauth2.authorization_endpoint = 'https://evil.com/a'",
        ),
    ],
)
def test_urls_of_another_site_are_refused(doc: dict[str, Any], where: str) -> None:
    with pytest.raises(PermissionDenied) as caught:
        accept(as_bytes(doc), EXAMPLE)
    assert where in caught.value.detail
    assert "which is not part of https://example.com" in caught.value.detail


@pytest.mark.parametrize("endpoint", ["https://evil.com/steal", "//evil.com/steal", "https://example.com:444/x"])
def test_tool_endpoints_leaving_the_site_are_refused(endpoint: str) -> None:
    doc = web_descriptor("https://example.com/v1")
    doc["platforms"]["web"]["tools"][0]["endpoint"] = endpoint
    with pytest.raises(PermissionDenied, match=r"tools\[list_tasks\]\.endpoint"):
        accept(as_bytes(doc), EXAMPLE)


def test_scope_urls_are_not_endpoints() -> None:
    doc = web_descriptor(
        "https://example.com", {"auth_url": "https://example.com/a", "token_url": "https://example.com/t"}
    )
    doc["platforms"]["web"]["auth"]["scopes"] = ["https://www.googleapis.com/auth/drive"]
    accept(as_bytes(doc), EXAMPLE)


def test_invalid_or_non_web_descriptors_are_refused_with_the_first_problem() -> None:
    with pytest.raises(
        AaiJsonInvalid, match=re.escape("https://example.com/.well-known/aai.json: invalid JSON at line 1, column 2")
    ):
        accept(b"{not json", EXAMPLE)
    doc = web_descriptor("https://example.com")
    del doc["platforms"]["web"]
    with pytest.raises(AaiJsonInvalid, match=r"has no web binding .* \(it has linux\)"):
        accept(as_bytes(doc), EXAMPLE)


@pytest.mark.parametrize(
    ("age_hours", "ttl", "fresh"),
    [(0, 24, True), (23.99, 24, True), (24, 24, False), (100, 24, False), (-0.01, 24, False), (0, 0, False)],
)
def test_freshness(age_hours: float, ttl: float, fresh: bool) -> None:
    now = 1_700_000_000.0
    assert webcache.is_fresh(now - age_hours * HOUR, now, ttl) is fresh


def test_meta_round_trips_and_rejects_what_it_did_not_write() -> None:
    meta = webcache.Meta("https://example.com/.well-known/aai.json", 1_700_000_000.0, 24.0, "ab" * 32)
    written = meta.to_json()
    assert written["fetched_at"] == "2023-11-14T22:13:20Z"
    assert webcache.Meta.from_json(json.loads(json.dumps(written))) == meta
    broken: Any
    for broken in ([], {}, {**written, "fetched_at": "yesterday"}, {**written, "ttl_hours": True}):
        assert webcache.Meta.from_json(broken) is None
    assert webcache.Meta.from_json({**written, "fetched_at": "2023-11-14T22:13:20"}) is None


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeSite:
    """A mock transport answering `.well-known/aai.json` requests, counting them."""

    def __init__(self, body: bytes, status: int = 200) -> None:
        self.body = body
        self.status = status
        self.requests: list[httpx2.Request] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(self.status, content=self.body)

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))


LOCAL_URL = "http://127.0.0.1:8080"


def local_settings(tmp_path: Path, ttl: float = 24.0) -> Settings:
    return Settings(
        scan_paths=(),
        platform="linux",
        cache_dir=tmp_path / "cache",
        web_allow_http_loopback=True,
        web_cache_ttl_hours=ttl,
    )


def local_doc() -> bytes:
    return as_bytes(web_descriptor(LOCAL_URL + "/api"))


@pytest.mark.anyio
async def test_fresh_entries_are_used_stale_ones_fetched_again(tmp_path: Path) -> None:
    settings, clock, fake = local_settings(tmp_path), Clock(1_700_000_000.0), FakeSite(local_doc())
    async with fake.client() as client:
        first = await discover(LOCAL_URL, settings, client=client, clock=clock)
        assert (first.from_cache, len(fake.requests)) == (False, 1)
        request = fake.requests[0]
        assert (str(request.url), request.headers["host"]) == (LOCAL_URL + "/.well-known/aai.json", "127.0.0.1:8080")
        folder = tmp_path / "cache" / "127.0.0.1_8080"
        meta = json.loads((folder / "aai.json.meta").read_text())
        assert meta == {
            "url": LOCAL_URL + "/.well-known/aai.json",
            "fetched_at": "2023-11-14T22:13:20Z",
            "ttl_hours": 24.0,
            "sha256": webcache.digest(local_doc()),
        }
        assert (folder / "aai.json").read_bytes() == local_doc()
        assert sorted(p.name for p in folder.iterdir()) == ["aai.json", "aai.json.meta"]

        clock.now += 23 * HOUR
        again = await discover(LOCAL_URL, settings, client=client, clock=clock)
        assert (again.from_cache, len(fake.requests)) == (True, 1)

        clock.now += 2 * HOUR
        fake.body = as_bytes({**web_descriptor(LOCAL_URL + "/api"), "description": "changed"})
        refreshed = await discover(LOCAL_URL, settings, client=client, clock=clock)
        assert (refreshed.from_cache, refreshed.descriptor.description, len(fake.requests)) == (False, "changed", 2)

        clock.now -= 10 * HOUR
        await discover(LOCAL_URL, settings, client=client, clock=clock)
        assert len(fake.requests) == 3, "a clock that went backwards makes the entry stale"


@pytest.mark.anyio
async def test_a_failed_fetch_serves_a_valid_stale_copy_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings, clock, fake = local_settings(tmp_path), Clock(1_700_000_000.0), FakeSite(local_doc())
    async with fake.client() as client:
        await discover(LOCAL_URL, settings, client=client, clock=clock)
        clock.now += 48 * HOUR
        for status, body in ((503, b"down"), (404, b""), (200, b"{broken")):
            fake.status, fake.body = status, body
            with caplog.at_level(logging.WARNING, "aai_gateway.discovery.wellknown"):
                served = await discover(LOCAL_URL, settings, client=client, clock=clock)
            assert served.from_cache
            assert served.descriptor.app_id == "com.example.tasks"
            assert "serving the cached http://127.0.0.1:8080/.well-known/aai.json (48.0 h old)" in caplog.text
            caplog.clear()


@pytest.mark.anyio
@pytest.mark.parametrize(
    "damage",
    [
        lambda folder: (folder / "aai.json").write_bytes(b"{garbage"),
        lambda folder: (folder / "aai.json").unlink(),
        lambda folder: (folder / "aai.json.meta").write_text("[]"),
        lambda folder: (folder / "aai.json.meta").unlink(),
        lambda folder: (folder / "aai.json.meta").write_text(
            json.dumps({**json.loads((folder / "aai.json.meta").read_text()), "url": "http://elsewhere/"})
        ),
    ],
)
async def test_broken_entries_are_fetched_again_and_never_served(tmp_path: Path, damage: Any) -> None:
    settings, clock, fake = local_settings(tmp_path), Clock(1_700_000_000.0), FakeSite(local_doc())
    folder = tmp_path / "cache" / "127.0.0.1_8080"
    async with fake.client() as client:
        await discover(LOCAL_URL, settings, client=client, clock=clock)
        damage(folder)
        refetched = await discover(LOCAL_URL, settings, client=client, clock=clock)
        assert (refetched.from_cache, len(fake.requests)) == (False, 2)
        assert (folder / "aai.json").read_bytes() == local_doc()

        damage(folder)
        fake.status = 500
        with pytest.raises(ApiRequestFailed, match="answered HTTP 500"):
            await discover(LOCAL_URL, settings, client=client, clock=clock)


@pytest.mark.anyio
async def test_policy_refusals_are_not_papered_over_by_the_cache(tmp_path: Path) -> None:
    settings, clock, fake = local_settings(tmp_path), Clock(1_700_000_000.0), FakeSite(local_doc())
    async with fake.client() as client:
        await discover(LOCAL_URL, settings, client=client, clock=clock)
        with pytest.raises(PermissionDenied, match="plain http, which is refused; use https"):
            await discover(LOCAL_URL, settings.with_changes(web_allow_http_loopback=False), client=client, clock=clock)
        with pytest.raises(PermissionDenied, match=re.escape("127.0.0.1 is a loopback address")):
            await discover(
                "https://127.0.0.1:8080", settings.with_changes(web_allow_http_loopback=False), client=client
            )
    assert len(fake.requests) == 1


def test_web_apps_are_found_by_site_api_origin_and_id() -> None:
    doc = web_descriptor("https://api.example.com/v1")
    app = WebApp(EXAMPLE, accept(as_bytes(doc), EXAMPLE), 0.0)
    twin = copy.deepcopy(doc)
    twin["platforms"]["web"]["base_url"] = "https://other.org"
    other_site = Site("https", "other.org", 443)
    other = WebApp(other_site, accept(as_bytes(twin), other_site), 0.0)
    index = WebApps()
    index.add(app)
    assert index.by_site(parse_site("example.com")) is app
    assert index.by_site(parse_site("https://api.example.com")) is app
    assert index.by_site(parse_site("api.example.com/v1")) is app
    assert index.by_site(parse_site("www.example.com")) is None
    assert index.by_id("com.example.tasks") == [app]
    assert index.site_of(app.descriptor) == EXAMPLE
    index.add(other)
    assert index.by_id("com.example.tasks") == [app, other]
    assert index.site_of(object()) is None

"""web:discover end to end: real sites on 127.0.0.1 (each its own port, so its own origin), the installed
`aai-gateway --mcp` driven by the SDK client, and the cache on disk under HOME/.cache/aai-gateway."""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import mcp_types as types
import pytest
from mcp import ClientSession

from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.support import gateway_command

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

WELL_KNOWN = "/.well-known/aai.json"
APP_ID = "dev.aai.webecho"


class SiteServer:
    """A real HTTP server on 127.0.0.1 port 0: files under `files` by path, `redirects`, and `/api/*`
    answering JSON that echoes the request."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.redirects: dict[str, str] = {}
        self.hits: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: tests read what they need from `hits`."""

            def do_GET(self) -> None:
                outer.answer(self)

            def do_POST(self) -> None:
                outer.answer(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        self.hits.append(parts.path)
        if parts.path in self.redirects:
            self.send(request, 302, b"", Location=self.redirects[parts.path])
        elif parts.path.startswith("/api/"):
            length = int(request.headers.get("content-length") or 0)
            body = json.loads(request.rfile.read(length)) if length else None
            echo = {"method": request.command, "path": parts.path, "query": dict(parse_qsl(parts.query)), "body": body}
            self.send(request, 200, json.dumps(echo).encode(), **{"Content-Type": "application/json"})
        elif parts.path in self.files:
            self.send(request, 200, self.files[parts.path], **{"Content-Type": "application/json"})
        else:
            self.send(request, 404, b"not found")

    @staticmethod
    def send(request: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
        request.send_response(status)
        for name, value in headers.items():
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def sites() -> Iterator[list[SiteServer]]:
    """Start sites with `sites.append(SiteServer())`; every one is stopped at the end."""
    started: list[SiteServer] = []
    try:
        yield started
    finally:
        for site in started:
            if site.thread.is_alive():
                site.stop()


def start_site(sites: list[SiteServer], descriptor: bytes | None = None) -> SiteServer:
    site = SiteServer()
    sites.append(site)
    if descriptor is not None:
        site.files[WELL_KNOWN] = descriptor
    return site


def descriptor(base_url: str) -> bytes:
    doc = {
        "schema_version": "1.0",
        "appId": APP_ID,
        "name": "Web Echo|网络回声",
        "description": "A tiny web API that echoes its request",
        "aliases": ["webecho"],
        "platforms": {
            "web": {
                "automation": "restapi",
                "base_url": base_url,
                "auth": {"type": "none"},
                "tools": [
                    {
                        "name": "echo",
                        "description": "Echo a text back",
                        "parameters": {
                            "type": "object",
                            "properties": {"text": {"type": "string", "description": "What to echo"}},
                            "required": ["text"],
                        },
                        "endpoint": "/echo",
                        "method": "GET",
                        "query_params": {"text": "${text}"},
                    }
                ],
            }
        },
    }
    return json.dumps(doc, indent=2).encode()


def make_home(tmp_path: Path, config: dict[str, Any] | None) -> Path:
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True, exist_ok=True)
    if config is not None:
        (home / ".aai" / "config.json").write_text(json.dumps(config))
    return home


LOOPBACK = {"web": {"allowHttpLoopback": True}}


def session(home: Path, tmp_path: Path) -> Any:
    return stdio_session({"HOME": str(home), "AAI_PLATFORM": "linux"}, tmp_path / "stderr.log")


async def discover(client: ClientSession, url: str) -> str:
    return text_of(await client.call_tool("web_discover", {"url": url}))


async def exec_reaches_the_app(client: ClientSession, app: str) -> None:
    """`aai:exec` with `app` finds the discovered app and runs the tool against the site's API."""
    arguments = {"app": app, "tool": "echo", "args": {"text": "hi"}}
    result = json.loads(text_of(await client.call_tool("aai_exec", arguments)))
    assert result["query"] == {"text": "hi"}, result


async def test_discover_returns_the_guide_caches_it_and_exec_reaches_the_app(
    tmp_path: Path, sites: list[SiteServer]
) -> None:
    site = start_site(sites)
    served = descriptor(site.url + "/api")
    site.files[WELL_KNOWN] = served
    home = make_home(tmp_path, LOOPBACK)
    folder = home / ".cache" / "aai-gateway" / f"127.0.0.1_{site.port}"

    async with session(home, tmp_path) as client:
        guide = await discover(client, site.url)
        assert guide.startswith("# Web Echo Operation Guide\n")
        assert f"- ID: {APP_ID}\n- Platform: web\n- Site: {site.url}\n" in guide
        assert "### echo" in guide
        assert f'app: "{site.url}",' in guide
        assert site.hits == [WELL_KNOWN]

        meta = json.loads((folder / "aai.json.meta").read_text())
        assert (folder / "aai.json").read_bytes() == served
        assert meta["url"] == site.url + WELL_KNOWN
        assert meta["sha256"] == hashlib.sha256(served).hexdigest()
        assert meta["ttl_hours"] == 24
        assert meta["fetched_at"].endswith("Z")

        names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["aai_search", "aai_install", "aai_exec", "aai_batch", "aai_run", "aai_wait", "web_discover"], (
            "web apps are fetched lazily, not listed"
        )
        assert text_of(await client.call_tool(f"app:{APP_ID}", {})) == guide

        for app in (site.url, f"{site.url}/api/", f"127.0.0.1:{site.port}", APP_ID):
            await exec_reaches_the_app(client, app)

        (folder / "aai.json").write_bytes(b'{"broken": ')
        assert await discover(client, f"HTTP://127.0.0.1:{site.port}/some/page") == guide
        assert site.hits.count(WELL_KNOWN) == 2, "a broken cache entry is fetched again"
        assert (folder / "aai.json").read_bytes() == served

    async with session(home, tmp_path) as client:
        await exec_reaches_the_app(client, site.url)
        assert site.hits.count(WELL_KNOWN) == 2, "a new gateway finds a URL's app in the fresh cache"
        site.stop()
        assert await discover(client, site.url) == guide, "a fresh entry needs no network"
        (folder / "aai.json").write_bytes(b"garbage")
        error = await error_of(client, "web_discover", {"url": site.url})
        assert (error.code, error.data["type"]) == (-32013, "API_REQUEST_FAILED")
        assert f"cannot connect to 127.0.0.1:{site.port}" in error.data["detail"]


async def test_search_finds_a_web_app_discovered_before_by_its_site(tmp_path: Path, sites: list[SiteServer]) -> None:
    site = start_site(sites)
    site.files[WELL_KNOWN] = descriptor(site.url + "/api")
    home = make_home(tmp_path, LOOPBACK)
    async with session(home, tmp_path) as client:
        await discover(client, site.url)
        found = (await client.call_tool("aai_search", {"query": "echo a text back"})).structured_content
        assert found is not None
        assert (found["results"][0]["app"]["id"], found["results"][0]["tool"]) == (site.url, "echo")
    async with session(home, tmp_path) as client:  # another run: the web app comes from the cache
        found = (await client.call_tool("aai_search", {"query": "echo a text back"})).structured_content
        assert found is not None
        hit = found["results"][0]
        assert (hit["app"]["id"], hit["tool"], hit["installed"]) == (site.url, "echo", True)
        assert site.hits == [WELL_KNOWN], "searching reads the cache, never the site"
        await exec_reaches_the_app(client, hit["app"]["id"])


async def test_a_stale_entry_is_served_with_a_warning_while_the_site_is_down(
    tmp_path: Path, sites: list[SiteServer]
) -> None:
    site = start_site(sites)
    site.files[WELL_KNOWN] = descriptor(site.url + "/api")
    home = make_home(tmp_path, {"web": {"allowHttpLoopback": True, "cacheTtlHours": 0}})
    async with session(home, tmp_path) as client:
        guide = await discover(client, site.url)
        assert await discover(client, site.url) == guide
        assert site.hits == [WELL_KNOWN, WELL_KNOWN], "a TTL of 0 fetches every time"
        site.stop()
        assert await discover(client, site.url) == guide
    log = (tmp_path / "stderr.log").read_text()
    assert f"WARNING aai_gateway.discovery.wellknown: serving the cached {site.url}{WELL_KNOWN}" in log
    assert "fetching it again failed" in log


async def test_refusals_say_what_is_wrong(tmp_path: Path, sites: list[SiteServer]) -> None:
    good = start_site(sites)
    good.files["/files/aai.json"] = descriptor(good.url + "/api")
    good.redirects[WELL_KNOWN] = "/files/aai.json"

    elsewhere = start_site(sites)
    elsewhere.redirects[WELL_KNOWN] = good.url + "/files/aai.json"

    huge = start_site(sites)
    big = json.loads(descriptor(huge.url + "/api"))
    big["description"] = "x" * (2 * 1024 * 1024)
    huge.files[WELL_KNOWN] = json.dumps(big).encode()

    foreign = start_site(sites)
    foreign.files[WELL_KNOWN] = descriptor(good.url + "/api")

    loop = start_site(sites)
    loop.redirects[WELL_KNOWN] = WELL_KNOWN

    empty = start_site(sites)

    invalid = start_site(sites)
    no_base = json.loads(descriptor(invalid.url))
    del no_base["platforms"]["web"]["base_url"]
    invalid.files[WELL_KNOWN] = json.dumps(no_base).encode()

    async with session(make_home(tmp_path, LOOPBACK), tmp_path) as client:
        assert "- Site: " + good.url in await discover(client, good.url), "redirects within the site are followed"

        cases: list[tuple[dict[str, Any], int, str]] = [
            ({"url": elsewhere.url}, -32004, f"redirects to {good.url}/files/aai.json, another site"),
            ({"url": huge.url}, -32007, "is larger than the 1.0 MiB limit"),
            ({"url": foreign.url}, -32004, f"base_url = '{good.url}/api', which is not part of {foreign.url}"),
            ({"url": loop.url}, -32013, "redirects more than 3 times"),
            ({"url": empty.url}, -32002, f"{empty.url} publishes no aai.json"),
            ({"url": invalid.url}, -32007, f"{invalid.url}{WELL_KNOWN}#/platforms/web: missing required field"),
            ({"url": "notion"}, -32005, "give the web app's domain (e.g. notion.com) or URL"),
            ({"url": "ftp://example.com"}, -32005, "is not a web URL"),
            ({}, -32005, "needs 'url' as a non-empty string"),
            ({"url": 42}, -32005, "needs 'url' as a non-empty string"),
        ]
        for arguments, code, says in cases:
            error = await error_of(client, "web_discover", arguments)
            assert error.code == code, (arguments, error)
            assert says in error.data["detail"], (arguments, error)
    for site in (elsewhere, huge, foreign, empty, invalid):
        assert not (tmp_path / "home" / ".cache" / "aai-gateway" / f"127.0.0.1_{site.port}").exists()


async def test_plain_http_needs_the_loopback_setting(tmp_path: Path, sites: list[SiteServer]) -> None:
    site = start_site(sites)
    site.files[WELL_KNOWN] = descriptor(site.url + "/api")
    async with session(make_home(tmp_path, None), tmp_path) as client:
        for name in ("web_discover", "web:discover"):
            error = await error_of(client, name, {"url": site.url})
            assert (error.code, error.data["type"]) == (-32004, "PERMISSION_DENIED")
            assert "uses plain http, which is refused; use https" in error.data["detail"]
            assert "web.allowHttpLoopback" in error.data["detail"]
        error = await error_of(client, "web_discover", {"url": f"https://127.0.0.1:{site.port}"})
        assert "127.0.0.1 is a loopback address, refused unless web.allowHttpLoopback" in error.data["detail"]
        error = await error_of(client, "aai_exec", {"app": site.url, "tool": "echo", "args": {"text": "x"}})
        assert error.code == -32004
    assert site.hits == []


async def test_errors_can_come_back_as_results(tmp_path: Path, sites: list[SiteServer]) -> None:
    site = start_site(sites)
    home = make_home(tmp_path, {**LOOPBACK, "errorStyle": "result"})
    async with session(home, tmp_path) as client:
        result = await client.call_tool("web_discover", {"url": site.url})
        assert result.is_error
        assert isinstance(result.structured_content, dict)
        assert result.structured_content["error"]["type"] == "APP_NOT_FOUND"
        assert isinstance(result.content[0], types.TextContent)


async def test_a_discovered_site_cannot_ask_for_other_secrets(tmp_path: Path, sites: list[SiteServer]) -> None:
    """A fetched descriptor names an environment variable and claims an installed app's id: neither
    secret may reach its server; only settings keyed by the site itself are used."""
    site = start_site(sites)
    doc = json.loads(descriptor(f"{site.url}/api"))
    doc["appId"] = "com.example.trusted"
    doc["platforms"]["web"]["auth"] = {"type": "api_key", "env_var": "GATEWAY_ONLY_SECRET", "key_name": "X-Key"}
    site.files[WELL_KNOWN] = json.dumps(doc).encode()
    apps: dict[str, Any] = {"com.example.trusted": {"apiKey": {"$env": "TRUSTED_KEY"}}}
    config = {**LOOPBACK, "apps": apps}
    home = make_home(tmp_path, config)
    env = {"HOME": str(home), "AAI_PLATFORM": "linux", "GATEWAY_ONLY_SECRET": "env-secret", "TRUSTED_KEY": "trusted"}
    async with stdio_session(env, tmp_path / "stderr.log") as client:
        await discover(client, site.url)
        error = await error_of(client, "aai_exec", {"app": site.url, "tool": "echo", "args": {"text": "hi"}})
        assert (error.code, error.data["type"]) == (-32011, "AUTH_REQUIRED")
        assert f'"apps": {{"{site.url}": ' in error.data["detail"]
        assert "GATEWAY_ONLY_SECRET" not in error.data["detail"]
    assert not any(hit.startswith("/api/") for hit in site.hits)

    apps[site.url] = {"apiKey": {"$env": "SITE_KEY"}}
    (home / ".aai" / "config.json").write_text(json.dumps(config))
    async with stdio_session({**env, "SITE_KEY": "for-this-site"}, tmp_path / "stderr.log") as client:
        await discover(client, site.url)
        result = json.loads(
            text_of(await client.call_tool("aai_exec", {"app": site.url, "tool": "echo", "args": {"text": "hi"}}))
        )
        assert result["query"] == {"text": "hi"}


def test_auth_commands_take_a_discovered_site(tmp_path: Path, sites: list[SiteServer]) -> None:
    """`aai-gateway auth ... <site URL>` finds the web app by discovering the site (sign-in needs OAuth 2)."""
    site = start_site(sites)
    site.files[WELL_KNOWN] = descriptor(f"{site.url}/api")
    home = make_home(tmp_path, LOOPBACK)
    done = subprocess.run(
        [gateway_command(), "auth", "status", site.url],
        capture_output=True,
        text=True,
        env={"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "has no web binding with a base_url and an auth section" in done.stderr or "OAuth 2" in done.stderr
    assert WELL_KNOWN in site.hits
    unknown = subprocess.run(
        [gateway_command(), "auth", "status", "no.such.app"],
        capture_output=True,
        text=True,
        env={"HOME": str(home), "AAI_PLATFORM": "linux", "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert "or give a web app's site URL" in unknown.stderr

"""`aai-gateway --web` answers a request for another address with a refusal on every path, before any
routing: never a redirect to that address, never a page or a 404."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.e2e.mcp_client import web_gateway

pytestmark = pytest.mark.e2e

PATHS = ["/ui", "/ui/", "/ui/settings", "/ui/static/ui.css", "/", "/nope", "/mcp", "/mcp/"]
REFUSED = (421, 403)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home: Path = tmp_path_factory.mktemp("home")
    env = {"HOME": str(home), "AAI_PLATFORM": "linux"}
    with web_gateway(env, home / "stderr.log") as url:
        yield url.removesuffix("/mcp")


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "localhost.evil:{port}"])
def test_a_foreign_host_is_refused_on_every_path(base: str, path: str, method: str, host: str) -> None:
    headers = {"host": host.format(port=_port(base)), "content-type": "application/json", "accept": "*/*"}
    answer = httpx2.request(method, base + path, headers=headers, content=b"{}", follow_redirects=False)
    assert answer.status_code in REFUSED, (answer.status_code, answer.text)
    assert "location" not in answer.headers


@pytest.mark.parametrize("path", ["/ui", "/ui/", "/", "/nope"])
def test_a_foreign_origin_is_refused_before_routing(base: str, path: str) -> None:
    answer = httpx2.get(base + path, headers={"origin": "http://evil.example"}, follow_redirects=False)
    assert answer.status_code == 403
    assert "location" not in answer.headers


def test_the_gateway_s_own_address_is_still_served(base: str) -> None:
    assert httpx2.get(base + "/ui", follow_redirects=False).headers["location"].endswith("/ui/")
    assert httpx2.get(base + "/ui/", follow_redirects=False).status_code == 401
    assert httpx2.get(base + "/nope", follow_redirects=False).status_code == 404
    local = f"localhost:{_port(base)}"
    assert httpx2.get(base + "/ui/", headers={"host": local}, follow_redirects=False).status_code == 401

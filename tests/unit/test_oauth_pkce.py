"""PKCE (RFC 7636), state, the authorization URL, the auth section's shapes and the loopback listener."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest

from aai_gateway.auth.loopback import LoopbackServer, Redirect
from aai_gateway.auth.pkce import Pkce, authorization_url, challenge_of, new_state, verifier_from
from aai_gateway.auth.provider import oauth_client, site_of
from aai_gateway.auth.tokens import TokenSet
from aai_gateway.config import AppSettings, Secret, Settings
from aai_gateway.errors import AuthConfigInvalid

# RFC 7636 appendix B: the 32 octets, the verifier they make, and its S256 challenge.
RFC_OCTETS = bytes(
    [116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186,
     22, 212, 37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121]
)  # fmt: skip
RFC_VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
RFC_CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def settings(tmp_path: Path, **app: Any) -> Settings:
    return Settings(
        scan_paths=(tmp_path,),
        platform="linux",
        apps={"com.example.notes": AppSettings(**app)} if app else {},
        aai_home=tmp_path / ".aai",
        web_allow_http_loopback=True,
    )


def test_rfc7636_appendix_b_vector() -> None:
    assert verifier_from(RFC_OCTETS) == RFC_VERIFIER
    assert challenge_of(RFC_VERIFIER) == RFC_CHALLENGE


def test_new_verifiers_are_random_unreserved_and_hidden() -> None:
    first, second = Pkce.new(), Pkce.new()
    assert first.verifier != second.verifier
    assert re.fullmatch(r"[A-Za-z0-9\-._~]{43,128}", first.verifier)
    assert first.challenge == challenge_of(first.verifier)
    assert first.method == "S256"
    assert first.verifier not in repr(first)


def test_short_verifier_is_refused() -> None:
    with pytest.raises(ValueError, match="43 to 128"):
        verifier_from(b"too short")


def test_state_is_unguessable() -> None:
    states = {new_state() for _ in range(100)}
    assert len(states) == 100
    assert all(len(s) >= 43 for s in states)


def test_authorization_url_carries_every_parameter_and_keeps_the_endpoints_own() -> None:
    pkce = Pkce(verifier=RFC_VERIFIER, challenge=RFC_CHALLENGE)
    url = authorization_url(
        "https://auth.example.com/authorize?audience=api&client_id=evil",
        client_id="my client",
        redirect_uri="http://127.0.0.1:5555/callback",
        scopes=["notes.read", "offline_access"],
        state="s-1",
        pkce=pkce,
    )
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "auth.example.com", "/authorize")
    assert parse_qs(parts.query) == {
        "audience": ["api"],
        "response_type": ["code"],
        "client_id": ["my client"],
        "redirect_uri": ["http://127.0.0.1:5555/callback"],
        "scope": ["notes.read offline_access"],
        "state": ["s-1"],
        "code_challenge": [RFC_CHALLENGE],
        "code_challenge_method": ["S256"],
    }
    assert RFC_VERIFIER not in url
    no_scope = authorization_url(
        "https://a.example/auth", client_id="c", redirect_uri="r", scopes=[], state="s", pkce=pkce
    )
    assert "scope" not in parse_qs(urlsplit(no_scope).query)


@pytest.mark.parametrize(
    ("url", "site"),
    [
        ("https://API.Example.com/v1/notes", "https://api.example.com"),
        ("https://api.example.com:443/", "https://api.example.com"),
        ("http://127.0.0.1:8080/x?y=1", "http://127.0.0.1:8080"),
        ("https://[::1]:8443/", "https://[::1]:8443"),
    ],
)
def test_site_is_the_origin(url: str, site: str) -> None:
    assert site_of(url) == site


def test_site_needs_http_or_https() -> None:
    with pytest.raises(ValueError, match="not an http"):
        site_of("ftp://example.com")


SHAPE_A = {
    "type": "oauth2",
    "auth_url": "https://auth.example.com/authorize",
    "token_url": "https://auth.example.com/token",
    "scopes": ["notes.read"],
}
SHAPE_B = {
    "type": "oauth2",
    "oauth2": {
        "authorization_endpoint": "https://auth.example.com/authorize",
        "token_endpoint": "https://auth.example.com/token",
        "scopes": ["notes.read"],
        "pkce": {"method": "S256"},
    },
}


@pytest.mark.parametrize("auth", [SHAPE_A, SHAPE_B], ids=["A", "B-C"])
def test_both_auth_shapes_give_the_same_client(tmp_path: Path, auth: dict[str, Any]) -> None:
    client = oauth_client(
        settings(tmp_path, client_id="cid", client_secret=Secret("shh"), redirect_port=7777),
        "com.example.notes",
        "https://api.example.com",
        auth,
    )
    assert client.authorization_endpoint == "https://auth.example.com/authorize"
    assert client.token_endpoint == "https://auth.example.com/token"
    assert client.scopes == ("notes.read",)
    assert (client.client_id, client.redirect_port) == ("cid", 7777)
    assert "shh" not in repr(client)


def test_missing_client_id_names_the_key_to_set(tmp_path: Path) -> None:
    with pytest.raises(AuthConfigInvalid) as caught:
        oauth_client(settings(tmp_path), "com.example.notes", "https://api.example.com", SHAPE_A)
    assert "apps.com.example.notes.clientId" in caught.value.detail


def test_a_client_id_in_the_descriptor_is_ignored(tmp_path: Path) -> None:
    auth = {**SHAPE_A, "client_id": "from-descriptor", "clientId": "from-descriptor"}
    with pytest.raises(AuthConfigInvalid, match="clientId"):
        oauth_client(settings(tmp_path), "com.example.notes", "https://api.example.com", auth)


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ({**SHAPE_A, "token_url": "http://auth.example.com/token"}, "must be an https URL"),
        ({**SHAPE_A, "auth_url": None}, "no authorization endpoint"),
        ({"type": "oauth2", "oauth2": {**SHAPE_B["oauth2"], "pkce": {"method": "plain"}}}, "S256"),  # type: ignore[dict-item]
        ({"type": "api_key"}, "does not sign in with OAuth 2"),
    ],
)
def test_unusable_auth_sections(tmp_path: Path, auth: dict[str, Any], message: str) -> None:
    with pytest.raises(AuthConfigInvalid, match=message):
        oauth_client(settings(tmp_path, client_id="cid"), "com.example.notes", "https://api.example.com", auth)


def test_plain_http_endpoints_only_on_loopback_when_allowed(tmp_path: Path) -> None:
    loopback = {**SHAPE_A, "auth_url": "http://127.0.0.1:9/auth", "token_url": "http://127.0.0.1:9/token"}
    allowed = settings(tmp_path, client_id="cid")
    assert oauth_client(allowed, "com.example.notes", "http://127.0.0.1:9", loopback).token_endpoint.startswith("http:")
    with pytest.raises(AuthConfigInvalid, match="allowHttpLoopback"):
        oauth_client(allowed.with_changes(web_allow_http_loopback=False), "com.example.notes", "x", loopback)


def test_token_sets_round_trip_and_never_show_tokens() -> None:
    tokens = TokenSet(access_token="AT-123", refresh_token="RT-456", expires_at=1000.5, scope="a b")
    assert TokenSet.from_json(tokens.to_json()) == tokens
    assert "AT-123" not in repr(tokens)
    assert "RT-456" not in repr(tokens)
    assert tokens.expires_within(60, now=950)
    assert not tokens.expires_within(60, now=900)
    assert not TokenSet(access_token="x").expires_within(60)
    with pytest.raises(ValueError, match="token set"):
        TokenSet.from_json('{"refresh_token": "x"}')


@pytest.mark.anyio
async def test_loopback_listener_checks_state_and_escapes_its_pages() -> None:
    async with LoopbackServer(0, "the-state", "com.example.<b>notes</b>") as server:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", server.redirect_uri)
        async with httpx2.AsyncClient() as http:
            elsewhere = await http.get(f"http://127.0.0.1:{server.port}/favicon.ico")
            assert elsewhere.status_code == 404
            wrong = await http.get(server.redirect_uri, params={"code": "c", "state": "forged"})
            assert wrong.status_code == 400
            assert "not the one aai-gateway is waiting for" in wrong.text
            posted = await http.post(server.redirect_uri, params={"code": "c", "state": "the-state"})
            assert posted.status_code == 405
            ok = await http.get(server.redirect_uri, params={"code": "the-code", "state": "the-state"})
        assert ok.status_code == 200
        assert "<b>" not in ok.text
        assert "&lt;b&gt;notes&lt;/b&gt;" in ok.text
        assert ok.headers["cache-control"] == "no-store"
        assert await server.wait(1) == Redirect(code="the-code")


@pytest.mark.anyio
async def test_loopback_listener_reports_the_servers_error_escaped() -> None:
    async with LoopbackServer(0, "s", "app") as server, httpx2.AsyncClient() as http:
        page = await http.get(
            server.redirect_uri,
            params={"error": "access_denied", "error_description": "<script>alert(1)</script>", "state": "s"},
        )
        assert page.status_code == 400
        assert "<script>" not in page.text
        assert "&lt;script&gt;" in page.text
        assert await server.wait(1) == Redirect(error="access_denied", description="<script>alert(1)</script>")


@pytest.mark.anyio
async def test_loopback_listener_times_out() -> None:
    async with LoopbackServer(0, "s", "app") as server:
        with pytest.raises(TimeoutError):
            await server.wait(0.05)

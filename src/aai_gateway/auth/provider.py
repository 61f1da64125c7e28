"""Where and as whom an app signs in: endpoints from the descriptor, the client from config.

The client id and secret come only from the gateway's config (`apps.<appId>.clientId`,
`apps.<appId>.clientSecret`), never from a descriptor: a descriptor says where to sign in, the
person running the gateway says as which registered client.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from aai_gateway.config import Secret, Settings
from aai_gateway.descriptor import Descriptor
from aai_gateway.errors import AuthConfigInvalid

DEFAULT_PORTS = {"http": 80, "https": 443}


def site_of(url: str) -> str:
    """The origin of `url` (`https://api.example.com`, `http://127.0.0.1:8080`): what secrets are keyed by."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    return f"{scheme}://{host}" if port in (None, DEFAULT_PORTS[scheme]) else f"{scheme}://{host}:{port}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def login_command(app_id: str) -> str:
    return f"aai-gateway auth login {app_id}"


@dataclass(frozen=True, slots=True)
class OAuthClient:
    """Everything a sign-in or a refresh needs, checked."""

    app_id: str
    site: str
    authorization_endpoint: str
    token_endpoint: str
    scopes: tuple[str, ...]
    client_id: str
    client_secret: Secret | None = field(default=None, repr=False)
    redirect_port: int = 0
    timeout: float = 30.0


def _endpoint(settings: Settings, app_id: str, what: str, url: Any) -> str:
    if not isinstance(url, str) or not url:
        raise AuthConfigInvalid(f"app {app_id}: the descriptor's OAuth 2 auth section has no {what}")
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme == "https" and host:
        return url
    if parts.scheme == "http" and is_loopback(host) and settings.web_allow_http_loopback:
        return url
    hint = " (plain http is allowed only to loopback addresses with web.allowHttpLoopback)" if host else ""
    raise AuthConfigInvalid(f"app {app_id}: the OAuth 2 {what} must be an https URL{hint}; got {url!r}")


def oauth_client(settings: Settings, app_id: str, site: str, auth: Mapping[str, Any]) -> OAuthClient:
    """Check a binding's auth mapping (shape A, or B/C's nested `oauth2`) and the app's config."""
    if auth.get("type") != "oauth2":
        raise AuthConfigInvalid(f"app {app_id} does not sign in with OAuth 2 (auth type {auth.get('type')!r})")
    nested = auth.get("oauth2")
    inner: Mapping[str, Any] = nested if isinstance(nested, Mapping) else auth
    pkce = inner.get("pkce")
    if isinstance(pkce, Mapping) and pkce.get("method", "S256") != "S256":
        raise AuthConfigInvalid(f"app {app_id}: only PKCE method S256 is supported; got {pkce.get('method')!r}")
    authorize = _endpoint(
        settings, app_id, "authorization endpoint", inner.get("authorization_endpoint") or inner.get("auth_url")
    )
    token = _endpoint(settings, app_id, "token endpoint", inner.get("token_endpoint") or inner.get("token_url"))
    raw_scopes = inner.get("scopes", auth.get("scopes")) or []
    if not isinstance(raw_scopes, list | tuple) or not all(isinstance(s, str) for s in raw_scopes):
        raise AuthConfigInvalid(f"app {app_id}: the descriptor's OAuth 2 scopes must be a list of strings")
    app = settings.apps.get(app_id)
    if app is None or not app.client_id:
        where = settings.config_file or settings.aai_home / "config.json"
        raise AuthConfigInvalid(
            f"app {app_id} signs in with OAuth 2 but no client is configured: set apps.{app_id}.clientId in "
            f"{where} (register a native or public client whose redirect URI is http://127.0.0.1/callback; "
            f'a confidential client also needs apps.{app_id}.clientSecret as {{"$env": "VARIABLE"}})'
        )
    return OAuthClient(
        app_id=app_id,
        site=site,
        authorization_endpoint=authorize,
        token_endpoint=token,
        scopes=tuple(raw_scopes),
        client_id=app.client_id,
        client_secret=app.client_secret,
        redirect_port=app.redirect_port,
        timeout=settings.web_timeout,
    )


@dataclass(frozen=True, slots=True)
class WebAuth:
    """An app's web binding as sign-in sees it."""

    app_id: str
    site: str
    auth: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.auth.get("type", "none"))


def web_auth(app: Descriptor) -> WebAuth | None:
    """The app's web binding (A's `platforms.web`, B/C with `platform: web`): site and auth, if it has both."""
    binding = app.bindings.get("web")
    if binding is None or not binding.auth:
        return None
    base_url = binding.options.get("base_url")
    if not isinstance(base_url, str):
        return None
    try:
        site = site_of(base_url)
    except ValueError:
        return None
    return WebAuth(app_id=app.app_id, site=site, auth=binding.auth)

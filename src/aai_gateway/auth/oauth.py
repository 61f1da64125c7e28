"""OAuth 2 for web apps: sign in (authorization code + PKCE S256 + state, loopback redirect), keep the
access token fresh, sign out, and say where things stand. Tokens live in the secret store, keyed
by the site (`"<site>|oauth"`), never in a log line, an error or a result.

`access_token()` is what executors call before each request (and with `force_refresh=True` once
after a 401); `login()`, `logout()` and `status()` back `aai-gateway auth login|logout|status`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aai_gateway.auth.loopback import LoopbackServer, Redirect
from aai_gateway.auth.pkce import Pkce, authorization_url, new_state
from aai_gateway.auth.provider import OAuthClient, login_command, oauth_client
from aai_gateway.auth.secrets import SecretStore, open_store, secret_key
from aai_gateway.auth.tokens import TokenError, TokenSet, exchange_code, refresh
from aai_gateway.config import Settings
from aai_gateway.errors import AuthConfigInvalid, AuthExpired, AuthRequired

log = logging.getLogger("aai_gateway.auth")

REFRESH_MARGIN = 60.0
"""Seconds before expiry at which an access token is refreshed rather than used."""

LOGIN_TIMEOUT = 300.0
"""Seconds `login()` waits for the browser to come back to the loopback redirect."""

KIND = "oauth"

_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = weakref.WeakKeyDictionary()


def _lock(site: str) -> asyncio.Lock:
    """One refresh at a time per site in this process (rotated refresh tokens are single-use)."""
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault(site, asyncio.Lock())


async def _load(store: SecretStore, site: str) -> TokenSet | None:
    raw = await asyncio.to_thread(store.get, secret_key(site, KIND))
    if raw is None:
        return None
    try:
        return TokenSet.from_json(raw)
    except ValueError:
        log.warning("the stored sign-in for %s is unreadable and is ignored; sign in again", site)
        return None


async def _save(store: SecretStore, site: str, tokens: TokenSet) -> None:
    await asyncio.to_thread(store.set, secret_key(site, KIND), tokens.to_json())


def _not_signed_in(app_id: str, site: str) -> AuthRequired:
    return AuthRequired(f"app {app_id} needs you to sign in to {site}: run `{login_command(app_id)}`")


def _expired(app_id: str, site: str, why: str) -> AuthExpired:
    return AuthExpired(
        f"the sign-in to {site} for app {app_id} expired and could not be refreshed ({why}): "
        f"run `{login_command(app_id)}`"
    )


def _why(exc: TokenError) -> str:
    if exc.status is None:
        return exc.description
    return f"the token endpoint answered {exc.error}" + (f": {exc.description}" if exc.description else "")


async def access_token(
    settings: Settings, app_id: str, site: str, auth: Mapping[str, Any], *, force_refresh: bool = False
) -> str:
    """A valid access token for `site`: the stored one, refreshed when it expires within 60 s or on
    `force_refresh` (after a 401). AuthRequired when never signed in, AuthExpired when a refresh
    fails, AuthConfigInvalid when the descriptor's auth section or the app's config is unusable."""
    client = oauth_client(settings, app_id, site, auth)
    store = await asyncio.to_thread(open_store, settings)
    seen = await _load(store, site)
    if seen is None:
        raise _not_signed_in(app_id, site)
    if not force_refresh and not seen.expires_within(REFRESH_MARGIN):
        return seen.access_token
    async with _lock(site):
        current = await _load(store, site)
        if current is None:
            raise _not_signed_in(app_id, site)
        if current.access_token != seen.access_token and not current.expires_within(REFRESH_MARGIN):
            return current.access_token  # refreshed meanwhile, by another call or process
        if not force_refresh and not current.expires_within(REFRESH_MARGIN):
            return current.access_token
        return await _refreshed(store, client, current, force_refresh=force_refresh)


async def _refreshed(store: SecretStore, client: OAuthClient, current: TokenSet, *, force_refresh: bool) -> str:
    if not current.refresh_token:
        raise _expired(client.app_id, client.site, "the server granted no refresh token")
    try:
        fresh = await refresh(client, current)
    except TokenError as exc:
        if not exc.reached and not force_refresh and not current.expires_within(0):
            log.warning("could not refresh the token for %s (%s); using the current one", client.site, exc.error)
            return current.access_token
        log.warning("refreshing the token for %s (app %s) failed: %s", client.site, client.app_id, exc.error)
        raise _expired(client.app_id, client.site, _why(exc)) from None
    await _save(store, client.site, fresh)
    log.info("refreshed the access token for %s (app %s)%s", client.site, client.app_id, _expiry_note(fresh))
    return fresh.access_token


def _expiry_note(tokens: TokenSet) -> str:
    if tokens.expires_at is None:
        return ""
    return f"; it expires in {max(0, round(tokens.expires_at - time.time()))} s"


async def _open(open_browser: Callable[[str], object], url: str) -> None:
    if inspect.iscoroutinefunction(open_browser):
        await open_browser(url)
        return
    result = await asyncio.to_thread(open_browser, url)
    if inspect.isawaitable(result):
        await result


def _report_browser(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("could not open the browser (%s); open the printed URL yourself", task.exception())


async def _redirect(
    client: OAuthClient, store_name: str, open_browser: Callable[[str], object], timeout: float
) -> tuple[Redirect, str, Pkce]:
    pkce, state = Pkce.new(), new_state()
    server = LoopbackServer(client.redirect_port, state, client.app_id)
    try:
        await server.start()
    except OSError as exc:
        raise AuthConfigInvalid(
            f"cannot listen on 127.0.0.1:{client.redirect_port} for the sign-in redirect ({exc.strerror or exc}): "
            f"set apps.{client.app_id}.redirectPort to a free port, or 0 to pick one"
        ) from None
    try:
        redirect_uri = server.redirect_uri
        url = authorization_url(
            client.authorization_endpoint,
            client_id=client.client_id,
            redirect_uri=redirect_uri,
            scopes=client.scopes,
            state=state,
            pkce=pkce,
        )
        log.info(
            "signing in to %s for app %s; waiting on %s (tokens go to %s)",
            client.site,
            client.app_id,
            redirect_uri,
            store_name,
        )
        browser = asyncio.ensure_future(_open(open_browser, url))
        browser.add_done_callback(_report_browser)
        try:
            redirect = await server.wait(timeout)
        except TimeoutError:
            raise AuthRequired(
                f"the sign-in to {client.site} did not complete within {timeout:g} s: "
                f"run `{login_command(client.app_id)}` again"
            ) from None
        finally:
            if not browser.done():
                await asyncio.wait([browser], timeout=5)
            if not browser.done():
                browser.cancel()
    finally:
        await server.close()
    return redirect, redirect_uri, pkce


async def login(
    settings: Settings,
    app_id: str,
    site: str,
    auth: Mapping[str, Any],
    *,
    open_browser: Callable[[str], object],
    timeout: float = LOGIN_TIMEOUT,
) -> TokenSet:
    """Sign in: `open_browser(url)` shows the authorization page; the loopback redirect brings the code
    back, which is exchanged (with the PKCE verifier) for tokens that are stored for `site`."""
    client = oauth_client(settings, app_id, site, auth)
    store = await asyncio.to_thread(open_store, settings)
    redirect, redirect_uri, pkce = await _redirect(client, store.name, open_browser, timeout)
    again = f"run `{login_command(app_id)}` again"
    if redirect.error or not redirect.code:
        detail = f"{redirect.error}: {redirect.description}" if redirect.description else str(redirect.error)
        raise AuthRequired(f"the sign-in to {site} was refused ({detail[:300]}): {again}")
    try:
        tokens = await exchange_code(client, redirect.code, redirect_uri, pkce.verifier)
    except TokenError as exc:
        raise AuthRequired(f"the sign-in to {site} failed ({_why(exc)}): {again}") from None
    await _save(store, site, tokens)
    log.info("signed in to %s for app %s%s", site, app_id, _expiry_note(tokens))
    return tokens


async def logout(settings: Settings, app_id: str, site: str) -> bool:
    """Forget the tokens stored for `site`; False when there were none."""
    store = await asyncio.to_thread(open_store, settings)
    key = secret_key(site, KIND)
    existed = await asyncio.to_thread(store.get, key) is not None
    await asyncio.to_thread(store.delete, key)
    if existed:
        log.info("signed out of %s (app %s)", site, app_id)
    return existed


@dataclass(frozen=True, slots=True)
class AuthStatus:
    """Where a site's sign-in stands. Holds no token."""

    app_id: str
    site: str
    signed_in: bool
    store: str
    expires_at: float | None = None
    scope: str | None = None
    refreshable: bool = False

    def expires_in(self, now: float | None = None) -> float | None:
        if self.expires_at is None:
            return None
        return self.expires_at - (time.time() if now is None else now)

    def to_json(self) -> dict[str, Any]:
        return {
            "appId": self.app_id,
            "site": self.site,
            "signedIn": self.signed_in,
            "expiresAt": self.expires_at,
            "expiresIn": None if self.expires_at is None else round(self.expires_in() or 0),
            "scope": self.scope,
            "refreshable": self.refreshable,
            "store": self.store,
        }


async def status(settings: Settings, app_id: str, site: str) -> AuthStatus:
    store = await asyncio.to_thread(open_store, settings)
    tokens = await _load(store, site)
    if tokens is None:
        return AuthStatus(app_id=app_id, site=site, signed_in=False, store=store.name)
    return AuthStatus(
        app_id=app_id,
        site=site,
        signed_in=True,
        store=store.name,
        expires_at=tokens.expires_at,
        scope=tokens.scope,
        refreshable=tokens.refresh_token is not None,
    )

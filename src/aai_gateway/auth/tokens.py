"""Token sets and the token endpoint (RFC 6749 §4.1.3 code exchange, §6 refresh), over httpx2.

Client authentication: a public client sends its `client_id` (PKCE proves the rest); a client with a
configured secret uses `client_secret_basic`, and `client_secret_post` when the server refuses that.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

import httpx2

from aai_gateway.auth.provider import OAuthClient

MAX_TOKEN_RESPONSE = 1024 * 1024


@dataclass(frozen=True, slots=True)
class TokenSet:
    """What the token endpoint granted. The tokens never show in a repr."""

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None
    """Unix time the access token expires, or None when the server did not say."""
    refresh_token: str | None = field(default=None, repr=False)
    scope: str | None = None

    def expires_within(self, seconds: float, now: float | None = None) -> bool:
        if self.expires_at is None:
            return False
        return self.expires_at - (time.time() if now is None else now) <= seconds

    def to_json(self) -> str:
        return json.dumps(
            {
                "access_token": self.access_token,
                "refresh_token": self.refresh_token,
                "expires_at": self.expires_at,
                "token_type": self.token_type,
                "scope": self.scope,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> TokenSet:
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
            raise ValueError("not a stored token set")
        expires_at = data.get("expires_at")
        refresh = data.get("refresh_token")
        scope = data.get("scope")
        return cls(
            access_token=data["access_token"],
            token_type=str(data.get("token_type") or "Bearer"),
            expires_at=float(expires_at) if isinstance(expires_at, int | float) else None,
            refresh_token=refresh if isinstance(refresh, str) else None,
            scope=scope if isinstance(scope, str) else None,
        )

    def with_expiry(self, expires_at: float | None) -> TokenSet:
        return replace(self, expires_at=expires_at)


class TokenError(Exception):
    """The token endpoint refused (`error` is its OAuth error code) or could not be reached (`status` None)."""

    def __init__(self, error: str, description: str = "", status: int | None = None) -> None:
        super().__init__(f"{error}: {description}" if description else error)
        self.error = error
        self.description = description
        self.status = status

    @property
    def reached(self) -> bool:
        return self.status is not None and self.status < 500


def _clean(text: Any, limit: int = 300) -> str:
    """A server-supplied message made safe for one line of a person's error message."""
    return "".join(c if c.isprintable() else " " for c in str(text))[:limit]


def _token_set(body: Mapping[str, Any], *, scope: str | None, previous: TokenSet | None, now: float) -> TokenSet:
    access = body.get("access_token")
    if not isinstance(access, str) or not access:
        raise TokenError("invalid_response", "the token endpoint's answer has no access_token", 200)
    token_type = body.get("token_type") or "Bearer"
    expires_in = body.get("expires_in")
    if isinstance(expires_in, str) and expires_in.isdigit():
        expires_in = int(expires_in)
    refresh = body.get("refresh_token")
    previous_refresh = previous.refresh_token if previous else None
    granted = body.get("scope")
    return TokenSet(
        access_token=access,
        token_type=str(token_type),
        expires_at=now + float(expires_in) if isinstance(expires_in, int | float) else None,
        refresh_token=refresh if isinstance(refresh, str) and refresh else previous_refresh,
        scope=granted if isinstance(granted, str) else scope,
    )


def _refusal(response: httpx2.Response) -> TokenError:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return TokenError(_clean(body["error"], 64), _clean(body.get("error_description") or ""), response.status_code)
    return TokenError("invalid_response", f"HTTP {response.status_code} from the token endpoint", response.status_code)


async def _post(http: httpx2.AsyncClient, client: OAuthClient, form: dict[str, str], how: str) -> httpx2.Response:
    data = dict(form)
    headers = {"Accept": "application/json"}
    if client.client_secret is None:
        data["client_id"] = client.client_id
    elif how == "basic":
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret.reveal(), safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    else:
        data["client_id"] = client.client_id
        data["client_secret"] = client.client_secret.reveal()
    try:
        return await http.post(client.token_endpoint, data=data, headers=headers)
    except httpx2.HTTPError as exc:
        raise TokenError("unreachable", f"the token endpoint did not answer ({type(exc).__name__})") from None


async def request_tokens(
    client: OAuthClient, form: dict[str, str], *, scope: str | None = None, previous: TokenSet | None = None
) -> TokenSet:
    """POST `form` to the token endpoint with the client's authentication; TokenError when refused."""
    async with httpx2.AsyncClient(timeout=client.timeout, follow_redirects=False) as http:
        response = await _post(http, client, form, "basic")
        if client.client_secret is not None and response.status_code in (400, 401):
            refusal = _refusal(response)
            if refusal.error == "invalid_client":
                response = await _post(http, client, form, "post")
    if response.status_code != 200:
        raise _refusal(response)
    if len(response.content) > MAX_TOKEN_RESPONSE:
        raise TokenError("invalid_response", "the token endpoint's answer is too large", response.status_code)
    try:
        body = response.json()
    except ValueError:
        raise TokenError("invalid_response", "the token endpoint did not answer JSON", 200) from None
    if not isinstance(body, dict):
        raise TokenError("invalid_response", "the token endpoint did not answer a JSON object", 200)
    return _token_set(body, scope=scope, previous=previous, now=time.time())


async def exchange_code(client: OAuthClient, code: str, redirect_uri: str, verifier: str) -> TokenSet:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
    }
    return await request_tokens(client, form, scope=" ".join(client.scopes) or None)


async def refresh(client: OAuthClient, tokens: TokenSet) -> TokenSet:
    if not tokens.refresh_token:
        raise TokenError("no_refresh_token", "the server granted no refresh token", 400)
    form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
    return await request_tokens(client, form, scope=tokens.scope, previous=tokens)

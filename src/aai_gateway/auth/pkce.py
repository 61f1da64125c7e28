"""PKCE (RFC 7636, method S256), the `state` value and the authorization request URL."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

VERIFIER_BYTES = 32
"""32 random octets make a 43-character verifier, the RFC's recommendation (256 bits of entropy)."""


def b64url(octets: bytes) -> str:
    """base64url without padding (RFC 7636 appendix A)."""
    return base64.urlsafe_b64encode(octets).rstrip(b"=").decode("ascii")


def verifier_from(octets: bytes) -> str:
    """The code verifier made of `octets` (43 to 128 characters of the unreserved set)."""
    verifier = b64url(octets)
    if not 43 <= len(verifier) <= 128:
        raise ValueError("a PKCE code verifier must be 43 to 128 characters long")
    return verifier


def challenge_of(verifier: str) -> str:
    """`BASE64URL-ENCODE(SHA256(ASCII(code_verifier)))`, the S256 code challenge."""
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def new_state() -> str:
    """An unguessable `state` value tying the redirect to this sign-in attempt."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class Pkce:
    verifier: str = field(repr=False)
    challenge: str
    method: str = "S256"

    @classmethod
    def new(cls) -> Pkce:
        verifier = verifier_from(secrets.token_bytes(VERIFIER_BYTES))
        return cls(verifier=verifier, challenge=challenge_of(verifier))


def authorization_url(
    endpoint: str,
    *,
    client_id: str,
    redirect_uri: str,
    scopes: Sequence[str],
    state: str,
    pkce: Pkce,
) -> str:
    """The authorization request (RFC 6749 §4.1.1 + RFC 7636 §4.3); query parameters of `endpoint` are kept."""
    parts = urlsplit(endpoint)
    params = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    ours = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": " ".join(scopes),
        "state": state,
        "code_challenge": pkce.challenge,
        "code_challenge_method": pkce.method,
    }
    if not scopes:
        del ours["scope"]
    params = [(k, v) for k, v in params if k not in ours]
    params.extend(ours.items())
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(params), ""))

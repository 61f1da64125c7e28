"""The bearer token of `/mcp`: where it comes from, when it is required, and the check before every request.

`/mcp` requires `Authorization: Bearer <token>` whenever the gateway listens on anything but loopback
(`mcpAuth: "remote"`, the default), or always (`mcpAuth: "always"`). The token is the value of the
environment variable `mcpToken` names, or else the contents of `<AAI home>/mcp-token` (mode 0600,
written by `aai-gateway token`). The file is re-read when it changes, so a rotated token takes effect
on the next request; a file that goes missing or becomes unusable refuses every request until it is
fixed. A token in the query string is refused whatever the setting: tokens travel in the header only.

The check runs in the ASGI front before anything else sees a request to `/mcp`, the calls answered in
front of the SDK included. Tokens are compared as SHA-256 digests with `hmac.compare_digest`, and no
token, right or wrong, is ever logged.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

from starlette.types import Scope, Send

from aai_gateway.config import Settings

log = logging.getLogger(__name__)

TOKEN_FILE = "mcp-token"  # noqa: S105 - the file's name, not a secret
REALM = 'Bearer realm="aai-gateway"'
QUERY_NAMES = frozenset({"access_token", "token"})
MIN_LENGTH = 16
B64TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")
"""RFC 6750's b64token: what may follow `Bearer ` in the header."""


class TokenProblem(Exception):
    """The token cannot be used, or is needed and missing; the message says what to do."""


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1); any other name or address is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_file(settings: Settings) -> Path:
    return settings.aai_home / TOKEN_FILE


def checked(token: str, where: str) -> str:
    """`token` stripped of surrounding whitespace, when it can be a bearer token; else a TokenProblem naming `where`."""
    token = token.strip()
    if not token:
        raise TokenProblem(f"{where} is empty")
    if not B64TOKEN.fullmatch(token):
        raise TokenProblem(f"{where} holds characters a bearer token cannot have (letters, digits and -._~+/ only)")
    if len(token) < MIN_LENGTH:
        raise TokenProblem(f"{where} is shorter than {MIN_LENGTH} characters, too easy to guess")
    return token


def write_token(path: Path) -> str:
    """A new token, written to `path` readable only by its owner; the file is replaced in one step."""
    token = new_token()
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)  # whatever the umask
            os.write(fd, f"{token}\n".encode())
        finally:
            os.close(fd)
        temp.replace(path)
    except OSError:
        temp.unlink(missing_ok=True)
        raise
    return token


def read_token(path: Path) -> str:
    """The token in `path`; a TokenProblem saying how to fix it when it is missing, unreadable, open to others
    or not a token."""
    remedy = "`aai-gateway token --rotate` writes a new one"
    try:
        info = path.stat()
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise TokenProblem(f"{path} does not exist; {remedy}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenProblem(f"{path} cannot be read ({getattr(exc, 'strerror', None) or exc}); {remedy}") from None
    if os.name == "posix" and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TokenProblem(
            f"{path} can be read by other users (mode {stat.S_IMODE(info.st_mode):o}); `chmod 600 {path}`, or {remedy}"
        )
    try:
        return checked(text, str(path))
    except TokenProblem as exc:
        raise TokenProblem(f"{exc}; {remedy}") from None


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).digest()


class Bearer:
    """The token `/mcp` requires: a fixed value, or a file re-read whenever it changes."""

    def __init__(self, *, value: str | None = None, file: Path | None = None, env_name: str | None = None) -> None:
        assert (value is None) != (file is None)
        self.file = file
        self.env_name = env_name
        self._expected = None if value is None else _digest(value)
        self._seen: tuple[int, ...] | None = None
        if file is not None:
            self._expected = _digest(read_token(file))  # a problem now stops the start
            self._seen = _identity(file)

    @property
    def where(self) -> str:
        """Where the token is, for people: never the token itself."""
        if self.file is not None:
            return f"in {self.file} (`aai-gateway token` prints it)"
        return f"the value of environment variable {self.env_name}"

    def expected(self) -> bytes | None:
        """The digest of the token now in force; None when the file has become unusable."""
        if self.file is None:
            return self._expected
        seen = _identity(self.file)
        if seen != self._seen:
            self._seen = seen
            try:
                self._expected = _digest(read_token(self.file))
                log.info("the bearer token of /mcp changed (%s); it is used from now on", self.file)
            except TokenProblem as exc:
                self._expected = None
                log.warning("%s; until then /mcp refuses every request", exc)
        return self._expected

    def accepts(self, sent: str) -> bool:
        expected = self.expected()
        return expected is not None and hmac.compare_digest(_digest(sent), expected)


def _identity(path: Path) -> tuple[int, ...] | None:
    """What changes when the file is replaced, written or made readable by others."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_mode


@dataclass(frozen=True, slots=True)
class Requirement:
    """Whether `/mcp` needs a token where the gateway listens, and why, in words for the start line."""

    needed: bool
    why: str


def requirement(settings: Settings) -> Requirement:
    host = settings.http_host
    if settings.mcp_auth == "always":
        return Requirement(True, 'mcpAuth is "always"')
    if is_loopback(host):
        return Requirement(False, f"{host} is a loopback address")
    return Requirement(True, f"{host} is not a loopback address")


def bearer_for(settings: Settings) -> Bearer | None:
    """The token `/mcp` will require, or None when it requires none; a TokenProblem saying how to set one."""
    need = requirement(settings)
    if not need.needed:
        return None
    name = settings.mcp_token
    try:
        if name is not None:
            if settings.mcp_token_value is None:
                raise TokenProblem(f"mcpToken names environment variable {name}, which is not set")
            value = checked(settings.mcp_token_value.reveal(), f"environment variable {name} (mcpToken)")
            return Bearer(value=value, env_name=name)
        path = token_file(settings)
        if not path.exists():
            raise TokenProblem(
                f"none is set: run `aai-gateway token` to create one in {path}, or set "
                '"mcpToken": {"$env": "VARIABLE"} in config.json; clients then send "Authorization: Bearer <token>"'
                + ("" if settings.mcp_auth == "always" else " (or listen on 127.0.0.1)")
            )
        return Bearer(file=path)
    except TokenProblem as exc:
        raise TokenProblem(f"/mcp needs a bearer token because {need.why}, but {exc}") from None


REASONS = {None: "no bearer token", "invalid_token": "a wrong bearer token", "invalid_request": "a token in the URL"}


class Gate:
    """The check in front of `/mcp`: answers a refused request itself and returns False, else returns True."""

    def __init__(self, bearer: Bearer | None) -> None:
        self.bearer = bearer

    async def admit(self, scope: Scope, send: Send) -> bool:
        if scope.get("query_string") and _token_in_query(scope["query_string"]):
            await self._refuse(
                scope,
                send,
                400,
                "invalid_request",
                "a token in the URL is refused: send it in the header Authorization: Bearer <token>",
            )
            return False
        if self.bearer is None:
            return True
        sent = _bearer_credentials(scope)
        if sent is None:
            await self._refuse(
                scope,
                send,
                401,
                None,
                "this endpoint needs the header Authorization: Bearer <token>; "
                "`aai-gateway token` prints the token on the gateway's machine",
            )
            return False
        if not self.bearer.accepts(sent):
            await self._refuse(scope, send, 401, "invalid_token", "the bearer token is not the gateway's token")
            return False
        return True

    async def _refuse(self, scope: Scope, send: Send, status: int, error: str | None, detail: str) -> None:
        client = scope.get("client")
        who = f"{client[0]}:{client[1]}" if client else "an unknown client"
        log.warning("refused %s %s from %s: %s", scope["method"], scope["path"], who, REASONS[error])
        challenge = REALM if error is None else f'{REALM}, error="{error}", error_description="{detail}"'
        body = json.dumps({"error": error or "unauthorized", "error_description": detail}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", challenge.encode()),
            (b"cache-control", b"no-store"),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _token_in_query(query: bytes) -> bool:
    pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
    return any(name.lower() in QUERY_NAMES for name, _ in pairs)


def _bearer_credentials(scope: Scope) -> str | None:
    """The credentials of the first Authorization header when its scheme is Bearer (any case), else None."""
    for name, value in scope["headers"]:
        if name.lower() == b"authorization":
            header: str = value.decode("latin-1")
            scheme, _, credentials = header.strip().partition(" ")
            if scheme.lower() != "bearer" or not credentials.strip():
                return None
            return credentials.strip()
    return None

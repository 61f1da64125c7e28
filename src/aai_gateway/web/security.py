"""Who may use the web UI: the login token, session cookies, Host and Origin checks, CSRF, headers.

The login token is printed at start and kept in `<AAI home>/web-token` (0600). Each token logs in
once: redeeming it starts a session (an HttpOnly, SameSite=Strict cookie on /ui) and writes a fresh
token to the file, so that a second browser can log in with what the file then holds.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from threading import Lock
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_FILE = "web-token"  # noqa: S105 - the file's name, not a secret
COOKIE = "aai_ui_session"
CSRF_FIELD = "csrf"
MAX_FORM_BYTES = 64 * 1024
PUBLIC_PATHS = ("/login", "/static/")

HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
}


def write_private(path: Path, text: str) -> None:
    """Write `text` to a file only its owner can read, whatever mode the file had before."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True, slots=True)
class Session:
    csrf: str


@dataclass
class Access:
    """The current login token and the sessions it started."""

    token_file: Path | None = None
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    _sessions: dict[bytes, Session] = field(default_factory=dict)
    _lock: Lock = field(default_factory=Lock)

    def __post_init__(self) -> None:
        self._save()

    def _save(self) -> None:
        if self.token_file is not None:
            write_private(self.token_file, self.token + "\n")

    def redeem(self, candidate: str) -> str | None:
        """A new session id when `candidate` is the current token (which is then replaced), else None."""
        with self._lock:
            if not candidate or not hmac.compare_digest(_digest(candidate), _digest(self.token)):
                return None
            self.token = secrets.token_urlsafe(32)
            self._save()
            session_id = secrets.token_urlsafe(32)
            self._sessions[_digest(session_id)] = Session(csrf=secrets.token_urlsafe(32))
            return session_id

    def session(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        return self._sessions.get(_digest(session_id))

    def end(self, session_id: str | None) -> None:
        if session_id:
            with self._lock:
                self._sessions.pop(_digest(session_id), None)


LoginPage = Callable[[Scope, int, str], Response]
"""Renders the login page with a status code and a message: the answer to a request without a session."""


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """`host:port` values a browser may send: the listen address and loopback names, on this port."""
    names = {host, "127.0.0.1", "localhost", "::1"}
    if host in ("0.0.0.0", "::"):  # noqa: S104 - naming the wildcard, not binding to it
        names |= {socket.gethostname(), socket.getfqdn()}
    shown = {f"[{n}]" if ":" in n else n for n in names}
    return frozenset(f"{n}:{port}".lower() for n in shown)


class SameSite:
    """Host and Origin checks (DNS rebinding, cross-site requests) against `hosts`, the `host:port` values
    the gateway answers to; as an ASGI app, in front of everything, so that no route, redirect or 404
    answers a request for another address."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(hosts)
        self.origins = frozenset(f"http://{h}" for h in self.hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self.refusal(Headers(scope=scope)) if scope["type"] == "http" else None
        if refusal is None:
            await self.app(scope, receive, send)
        else:
            await refusal(scope, receive, send)

    def refusal(self, headers: Headers) -> Response | None:
        if headers.get("host", "").lower() not in self.hosts:
            return PlainTextResponse("This address is not the one the gateway listens on.", status_code=421)
        if not self._same_origin(headers):
            return PlainTextResponse("Requests from other sites are refused.", status_code=403)
        return None

    def _same_origin(self, headers: Headers) -> bool:
        """Origin, when sent, must be this UI. With Referrer-Policy no-referrer a browser sends
        `Origin: null` on the UI's own form posts; that passes only when the browser also says, in a
        header no page can set, that the request comes from this origin."""
        origin = headers.get("origin")
        fetch_site = headers.get("sec-fetch-site")
        if fetch_site is not None and fetch_site not in ("same-origin", "none"):
            return False
        if origin is None:
            return True
        if origin == "null":
            return fetch_site == "same-origin"
        return origin.lower() in self.origins


class Guard(SameSite):
    """ASGI middleware in front of the UI: every check happens before a page sees the request."""

    def __init__(self, app: ASGIApp, access: Access, hosts: Iterable[str], render_login: LoginPage) -> None:
        super().__init__(app, hosts)
        self.access = access
        self.render_login = render_login

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.decode().lower() not in HEADERS]
                headers.extend((k.encode(), v.encode()) for k, v in HEADERS.items())
                message = {**message, "headers": headers}
            await send(message)

        refusal = await self._check(scope, receive)
        if isinstance(refusal, Response):
            await refusal(scope, receive, send_secured)
            return
        await self.app(scope, refusal or receive, send_secured)

    async def _check(self, scope: Scope, receive: Receive) -> Response | Receive | None:
        headers = Headers(scope=scope)
        refusal = self.refusal(headers)
        if refusal is not None:
            return refusal
        path, root = scope["path"], scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        if path.startswith(PUBLIC_PATHS):
            return None
        cookie = _cookie(headers)
        session = self.access.session(cookie)
        if session is None:
            return self.render_login(scope, 401, "")
        scope.setdefault("state", {})["csrf"] = session.csrf
        scope["state"]["session"] = cookie
        if scope["method"] in ("GET", "HEAD"):
            return None
        if scope["method"] != "POST":
            return PlainTextResponse("Method not allowed.", status_code=405)
        body = await _read_body(receive)
        if body is None:
            return PlainTextResponse("The form is too large.", status_code=413)
        sent = _form_field(body, CSRF_FIELD, headers.get("content-type", ""))
        if sent is None or not hmac.compare_digest(_digest(sent), _digest(session.csrf)):
            return PlainTextResponse("The form's CSRF token is missing or wrong; reload the page.", status_code=403)
        return _replay(body, receive)


def _cookie(headers: Headers) -> str | None:
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return None


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _form_field(body: bytes, name: str, content_type: str) -> str | None:
    if content_type.split(";", 1)[0].strip().lower() != "application/x-www-form-urlencoded":
        return None
    try:
        values = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=100).get(name)
    except (UnicodeDecodeError, ValueError):
        return None
    return values[0] if values and len(values) == 1 else None


def _replay(body: bytes, rest: Receive) -> Receive:
    """The body already read, then whatever the client sends next (its disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await rest()

    return receive

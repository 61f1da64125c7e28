"""Web REST (`restapi` in shape A, `http` in shapes B and C) over one pooled HTTP client.

A call is built into a request (`http_request`), its credential found (`http_auth`) before anything
touches the network, its destination resolved and checked (`http_guard`), and sent; the whole call,
retries included, keeps within the tool's timeout. Redirects are followed only within the API's own
origin and base path; 429 and 503 with Retry-After are retried only for idempotent methods and only
when the wait fits in the time left; nothing is sent again after a timeout. A 401 under OAuth 2
refreshes the token once. An API that hands out a session header on a 409 answer and wants it back on
every request (the binding's `session_header`, such as Transmission's X-Transmission-Session-Id, a
guard against cross-site requests) gets it, and the request is sent once more. Responses are read up
to `web.maxResponseBytes`. Secrets never reach a result, an error or a log line: the query string
(which may carry a key) is never quoted, and every credential is redacted from what comes back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any
from urllib.parse import quote, urlencode

import httpx2

from aai_gateway import __version__, paths
from aai_gateway.config import Settings
from aai_gateway.deadlines import Deadlines
from aai_gateway.errors import AaiError, ApiRequestFailed, InvalidParams, Timeout
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.http_auth import (
    AuthSpec,
    Credential,
    auth_spec,
    credential,
    fetched_from,
    oauth_token,
    stored_token,
)
from aai_gateway.executors.http_guard import check_host, check_scheme
from aai_gateway.executors.http_request import Base, HttpRequest, build, inside
from aai_gateway.executors.http_response import may_retry, parse_output, retry_after, status_error
from aai_gateway.secret_forms import redact

log = logging.getLogger(__name__)

USER_AGENT = f"aai-gateway/{__version__}"
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
MAX_RETRIES = 3
ERROR_BODY_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: httpx2.Headers
    body: bytes
    charset: str | None


@dataclass(frozen=True, slots=True)
class Attempt:
    """One request on the wire: the method and URL change only when a redirect is followed."""

    method: str
    url: httpx2.URL
    content: bytes | None

    def __str__(self) -> str:
        return f"{self.method} {_path_of(self.url)}"


@dataclass(slots=True)
class Exchange:
    call: ToolCall
    request: HttpRequest
    spec: AuthSpec
    deadline: float
    secrets: list[str] = field(default_factory=list)
    credential: Credential | None = None


class HttpExecutor:
    def __init__(self, settings: Settings, environ: Mapping[str, str] | None = None) -> None:
        self._settings = settings
        self._environ = paths.environ() if environ is None else environ
        self._client: httpx2.AsyncClient | None = None
        self._sessions: dict[tuple[str, str], str] = {}
        """(origin, header name) → the session header's value the API handed out last."""
        self._deadlines = Deadlines()
        for name in ("httpx2", "httpcore2"):
            logging.getLogger(name).setLevel(logging.WARNING)

    async def execute(self, call: ToolCall) -> Any:
        request = build(call.binding, call.tool, call.args)
        check_scheme(request.base, self._settings)
        loop = asyncio.get_running_loop()
        exchange = Exchange(call, request, auth_spec(call.binding.auth), loop.time() + call.timeout)
        try:
            async with self._deadlines.within(call.timeout):
                # A missing credential is the user's to fix first, and needs no network to find out.
                await self._authenticate(exchange, force=False)
                await check_host(request.base, self._settings)
                reply = await self._exchange(exchange)
            result = parse_output(reply.body, reply.charset, request.parser, str(request))
        except TimeoutError:
            raise Timeout(f"{call.app.app_id} did not answer {request} within {call.timeout:g} s") from None
        except AaiError as exc:
            detail = redact(exc.detail, exchange.secrets)
            if detail != exc.detail:
                raise type(exc)(detail) from None
            raise
        return redact(result, exchange.secrets)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            self._client = httpx2.AsyncClient(
                follow_redirects=False,
                trust_env=False,
                headers={"User-Agent": USER_AGENT},
                cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
            )
        return self._client

    async def _exchange(self, ex: Exchange) -> Reply:
        attempt = Attempt(ex.request.method, httpx2.URL(ex.request.url), ex.request.content)
        _check_target(attempt.url, ex.request.base)
        refreshed, renewed, retries, hops = False, False, 0, 0
        session_header = ex.call.binding.options.get("session_header")
        loop = asyncio.get_running_loop()
        while True:
            reply = await self._send(ex, attempt)
            if reply.status in REDIRECTS:
                attempt = self._redirected(ex, attempt, reply)
                hops += 1
                if hops > MAX_REDIRECTS:
                    raise ApiRequestFailed(f"{ex.request} was redirected more than {MAX_REDIRECTS} times")
                continue
            if reply.status == 409 and isinstance(session_header, str) and not renewed:
                handed = reply.headers.get(session_header)
                if handed:
                    renewed = True
                    self._sessions[(ex.request.base.origin, session_header)] = handed
                    continue
            if reply.status == 401 and ex.spec.kind == "oauth2" and not refreshed:
                refreshed = True
                await self._authenticate(ex, force=True)
                continue
            wait = retry_after(reply.headers.get("retry-after")) if may_retry(attempt.method, reply.status) else None
            if wait is not None and retries < MAX_RETRIES and loop.time() + wait < ex.deadline:
                retries += 1
                log.debug("%s answered %d; trying again in %g s", attempt, reply.status, wait)
                await asyncio.sleep(wait)
                continue
            if reply.status >= 300:
                raise status_error(
                    reply.status,
                    httpx2.codes.get_reason_phrase(reply.status),
                    str(attempt),
                    redact(reply.body.decode("utf-8", errors="replace"), ex.secrets),
                    auth_kind=ex.spec.kind,
                    refused=self._refused(ex),
                    retry_in=wait,
                )
            return reply

    async def _authenticate(self, ex: Exchange, *, force: bool) -> None:
        if ex.spec.kind is None:
            return
        fetched = fetched_from(ex.call.app)
        # A descriptor fetched from a website is keyed by that site, never by the id it claims, and may
        # not name environment variables: otherwise any site could ask for another app's secrets.
        app_id = fetched or ex.call.app.app_id
        if ex.spec.kind == "oauth2":
            auth = ex.call.binding.auth or {}
            token = await oauth_token(self._settings, app_id, ex.request.base.origin, auth, force=force)
            source = "the OAuth 2 sign-in"
        else:
            spec = replace(ex.spec, env_var=None) if fetched else ex.spec
            token, source = stored_token(spec, app_id, self._settings, self._environ)
        ex.credential = credential(ex.spec, token, source)
        ex.secrets += [ex.credential.value.reveal(), token.reveal()]

    def _refused(self, ex: Exchange) -> str:
        if ex.credential is None:
            return ""
        return f"the {ex.spec.noun} from {ex.credential.source} was refused; put a valid one there"

    async def _send(self, ex: Exchange, attempt: Attempt) -> Reply:
        headers = [(k.encode("ascii"), v.encode("utf-8")) for k, v in ex.request.headers]
        session_header = ex.call.binding.options.get("session_header")
        session = self._sessions.get((ex.request.base.origin, str(session_header)))
        if isinstance(session_header, str) and session is not None:
            headers.append((session_header.encode("ascii"), session.encode("utf-8")))
        url = attempt.url
        cred = ex.credential
        if cred is not None and cred.placement == "header":
            headers = [h for h in headers if h[0].lower() != cred.name.lower().encode("ascii")]
            headers.append((cred.name.encode("ascii"), cred.value.reveal().encode("utf-8")))
        elif cred is not None:
            pair = urlencode([(cred.name, cred.value.reveal())], quote_via=quote)
            try:
                url = httpx2.URL(f"{url}{'&' if url.query else '?'}{pair}")
            except httpx2.InvalidURL:
                raise InvalidParams(f"the URL of {attempt} with the {ex.spec.noun} is too long to send") from None
        remaining = max(0.001, ex.deadline - asyncio.get_running_loop().time())
        client = self._http()
        outgoing = client.build_request(
            attempt.method, url, headers=headers, content=attempt.content, timeout=httpx2.Timeout(remaining)
        )
        try:
            response = await client.send(outgoing, stream=True)
            try:
                body = await self._read(response, attempt)
            finally:
                await response.aclose()
        except httpx2.TimeoutException:
            raise TimeoutError from None
        except httpx2.HTTPError as exc:
            why = str(exc) or type(exc).__name__
            raise ApiRequestFailed(f"{attempt} could not reach {ex.request.base.origin}: {why}") from None
        log.debug("%s answered %d (%d bytes)", attempt, response.status_code, len(body))
        return Reply(response.status_code, response.headers, body, response.charset_encoding)

    async def _read(self, response: httpx2.Response, attempt: Attempt) -> bytes:
        """The body, up to `web.maxResponseBytes`; an error's body is only read far enough to quote it."""
        cap = self._settings.web_max_response_bytes
        too_big = ApiRequestFailed(
            f"{attempt} answered with more than {cap} bytes, the most a response may have (web.maxResponseBytes)"
        )
        failed = response.status_code >= 300
        length = response.headers.get("content-length", "")
        if not failed and attempt.method != "HEAD" and length.isdigit() and int(length) > cap:
            raise too_big
        limit = min(cap, ERROR_BODY_BYTES) if failed else cap
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                if failed:
                    break
                raise too_big
        return b"".join(chunks)[:limit]

    def _redirected(self, ex: Exchange, attempt: Attempt, reply: Reply) -> Attempt:
        """The next attempt after a redirect inside the API; any other redirect is an error."""
        base = ex.request.base
        location = reply.headers.get("location")
        try:
            target = attempt.url.join(location) if location else None
        except httpx2.InvalidURL:
            target = None
        if target is None or not _same_origin(target, base) or not inside(base.path, _path_of(target)):
            where = f" to {_origin_of(target)}{_path_of(target)}" if target else ""
            raise ApiRequestFailed(
                f"{attempt} answered {reply.status} redirecting{where}, outside {base.origin}{base.path}; "
                "only redirects within the API are followed"
            )
        method = attempt.method
        if (reply.status == 303 and method != "HEAD") or (reply.status in (301, 302) and method == "POST"):
            return Attempt("GET", target, None)
        return Attempt(method, target, attempt.content)


def _path_of(url: httpx2.URL) -> str:
    return url.raw_path.split(b"?", 1)[0].decode("ascii", errors="replace")


def _origin_of(url: httpx2.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode('ascii', errors='replace')}"


def _same_origin(url: httpx2.URL, base: Base) -> bool:
    port = url.port or (443 if url.scheme == "https" else 80)
    return (url.scheme, url.host.lower(), port) == (base.scheme, base.host, base.effective_port)


def _check_target(url: httpx2.URL, base: Base) -> None:
    if not _same_origin(url, base) or not inside(base.path, _path_of(url)):
        raise InvalidParams(f"the request would leave the API at {base.origin}{base.path}")

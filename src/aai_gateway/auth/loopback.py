"""The loopback redirect (RFC 8252 §7.3): a one-shot HTTP listener on 127.0.0.1 for `/callback`.

It answers the browser with a small page (everything in it escaped) and hands the code, or the
server's error, to the waiting sign-in once a redirect carries the expected `state`. A redirect
with another `state` is refused and the wait goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import secrets
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger("aai_gateway.auth")

HOST = "127.0.0.1"
PATH = "/callback"
MAX_HEAD = 16 * 1024
READ_TIMEOUT = 10.0

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}}
h1{{font-size:1.4rem;color:{color}}}code{{background:#f3f3f3;padding:.1rem .3rem}}</style></head>
<body><h1>{title}</h1><p>{message}</p><p>{hint}</p></body></html>
"""


def page(title: str, message: str, hint: str, *, ok: bool) -> str:
    return PAGE.format(
        title=html.escape(title),
        message=html.escape(message),
        hint=html.escape(hint),
        color="#1a7f37" if ok else "#b42318",
    )


@dataclass(frozen=True, slots=True)
class Redirect:
    """What the authorization server sent back: a code, or an error with its description."""

    code: str | None = None
    error: str | None = None
    description: str = ""


class LoopbackServer:
    """`async with LoopbackServer(port, state, app_id) as server: await server.wait(timeout)`."""

    def __init__(self, port: int, state: str, app_id: str) -> None:
        self._port = port
        self._state = state
        self._app_id = app_id
        self._result: asyncio.Future[Redirect] | None = None
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def redirect_uri(self) -> str:
        return f"http://{HOST}:{self.port}{PATH}"

    async def start(self) -> None:
        """Listen; OSError when the port is taken."""
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, HOST, self._port, limit=MAX_HEAD)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def __aenter__(self) -> LoopbackServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def wait(self, timeout: float) -> Redirect:
        """The redirect carrying our `state`; TimeoutError when none came in time."""
        assert self._result is not None
        return await asyncio.wait_for(asyncio.shield(self._result), timeout)

    def _answer(self, target: str) -> tuple[int, str, Redirect | None]:
        parts = urlsplit(target)
        if parts.path != PATH:
            return 404, page("Not found", "This address only receives the sign-in redirect.", "", ok=False), None
        query = parse_qs(parts.query, keep_blank_values=True)
        state = query.get("state", [""])[0]
        again = f"Start again with: aai-gateway auth login {self._app_id}"
        if not secrets.compare_digest(state.encode(), self._state.encode()):
            log.warning("a redirect to the sign-in listener carried the wrong state; ignored")
            return (
                400,
                page(
                    "Sign-in link not recognised",
                    "This redirect is not the one aai-gateway is waiting for.",
                    again,
                    ok=False,
                ),
                None,
            )
        error = query.get("error", [""])[0]
        if error:
            description = query.get("error_description", [""])[0]
            return (
                400,
                page("Sign-in failed", f"The server answered {error}: {description}".strip(": "), again, ok=False),
                Redirect(error=error, description=description),
            )
        code = query.get("code", [""])[0]
        if not code:
            return (
                400,
                page("Sign-in failed", "The redirect carried no code.", again, ok=False),
                Redirect(error="invalid_request", description="the redirect carried no authorization code"),
            )
        return (
            200,
            page(
                f"Signed in to {self._app_id}", "aai-gateway received the sign-in.", "You can close this tab.", ok=True
            ),
            Redirect(code=code),
        )

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT)
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            method, target, _version = request_line.split(" ", 2)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError, ConnectionError):
            writer.close()
            return
        if method != "GET":
            status, body, redirect = 405, page("Method not allowed", "Only GET is answered here.", "", ok=False), None
        else:
            status, body, redirect = self._answer(target)
        payload = body.encode("utf-8")
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}[status]
        headers = (
            f"HTTP/1.1 {status} {reason}\r\n"
            "Content-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(payload)}\r\n"
            "Cache-Control: no-store\r\n"
            "Referrer-Policy: no-referrer\r\n"
            "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'\r\n"
            "Connection: close\r\n\r\n"
        )
        try:
            writer.write(headers.encode("latin-1") + payload)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
        if redirect is not None and self._result is not None and not self._result.done():
            self._result.set_result(redirect)

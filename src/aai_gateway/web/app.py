"""The web UI as an ASGI app, mounted at /ui beside /mcp by `aai-gateway --web`."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Scope

from aai_gateway.service import Gateway
from aai_gateway.web.pages import Pages, Rescan
from aai_gateway.web.security import Access, Guard, allowed_hosts

HERE = Path(__file__).parent
UI_PATH = "/ui"


def templates() -> Environment:
    return Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, auto_reload=False)


def build_ui(gateway: Gateway, access: Access, host: str, port: int, rescan: Rescan | None = None) -> ASGIApp:
    """The UI for a gateway listening on `host:port`; `rescan` also tells connected clients what changed."""

    async def plain_rescan() -> set[str]:
        return gateway.rescan()

    pages = Pages(gateway, access, templates(), rescan or plain_rescan)

    def login_page(scope: Scope, status: int, message: str) -> Response:
        return pages.login_page(Request(scope), status, message)

    app = Starlette(
        routes=[
            Route("/", pages.overview),
            Route("/login", pages.login, methods=["GET", "POST"]),
            Route("/logout", pages.logout, methods=["POST"]),
            Route("/apps", pages.apps),
            Route("/library", pages.library.page),
            Route("/library/install", pages.install, methods=["POST"]),
            Route("/library/update", pages.library.update, methods=["POST"]),
            Route("/workflows", pages.workflows.page),
            Route("/workflows/run", pages.workflows.run, methods=["POST"]),
            Route("/workflows/approve", pages.workflows.approve, methods=["POST"]),
            Route("/apps/{app_id:path}", pages.app),
            Route("/history", pages.history),
            Route("/history/export", pages.export),
            Route("/insights", pages.insights),
            Route("/history/{call_id}", pages.call),
            Route("/consent", pages.consent),
            Route("/consent/decide", pages.decide, methods=["POST"]),
            Route("/consent/revoke", pages.revoke, methods=["POST"]),
            Route("/consent/server", pages.approve_server, methods=["POST"]),
            Route("/settings", pages.settings),
            Route("/rescan", pages.rescan, methods=["POST"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
    )
    return Guard(app, access, allowed_hosts(host, port), login_page)

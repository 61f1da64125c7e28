"""The Library page: search and browse the library and the stores by category, install, update.

Installing or updating here is a person at their own UI: the session, CSRF and Origin checks of
`security.Guard` cover it. An entry that starts a program (an MCP server) shows the program, its
arguments and its environment before its Install button; a store's entry, whose descriptor is only
known once fetched, is shown that way first and installed only when the same bytes are confirmed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from aai_gateway.consent.launches import LaunchLine, launch_line
from aai_gateway.descriptor import Descriptor
from aai_gateway.errors import AaiError
from aai_gateway.history import HistoryUnavailable
from aai_gateway.history.record import now

if TYPE_CHECKING:
    from aai_gateway.library.entries import Entry
    from aai_gateway.web.pages import Pages

BUS_TIMEOUT = 1.0


def find(entries: Iterable[Entry], query: str) -> list[Entry]:
    """The entries matching `query`, best first (every entry, by name, for none): the one place the page searches."""
    from aai_gateway.search.entries import ranked  # noqa: PLC0415 (search loads when the page shows it)

    return ranked(entries, query)


def launch_of(app: Descriptor | None) -> LaunchLine | None:
    """The program, arguments and environment (or URL) an MCP-server descriptor runs, secrets masked, as the
    approval question shows them; None for other apps."""
    binding = app.mcp if app is not None else None
    return launch_line(app.app_id, binding.options, binding.auth) if app is not None and binding is not None else None


class LibraryPages:
    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.gateway = pages.gateway

    async def page(
        self,
        request: Request,
        message: str = "",
        report: tuple[str, ...] = (),
        status: int = 200,
        review: tuple[Entry, LaunchLine, str] | None = None,
    ) -> Response:
        from aai_gateway.library import presence  # noqa: PLC0415
        from aai_gateway.library.updates import outdated  # noqa: PLC0415

        query = request.query_params.get("q", "").strip()[:200]
        chosen = request.query_params.get("category", "")
        catalog = await self.pages.catalog()
        settings = self.gateway.settings
        categories = sorted({e.category for e in catalog.entries})
        found = [e for e in find(catalog.entries, query) if not chosen or e.category == chosen]
        present = await presence.check(found, settings, timeout=BUS_TIMEOUT)
        updates = {o.app_id: o for o in await run_in_threadpool(outdated, catalog, settings.aai_home)}
        installed = {e.app_id for e in found if (settings.aai_home / e.app_id / "aai.json").is_file()}
        try:
            from aai_gateway.history.success import success_rates  # noqa: PLC0415

            rates = await run_in_threadpool(success_rates, self.gateway.history, now())
        except HistoryUnavailable:
            rates = None
        grouped: dict[str, list[Entry]] = {}
        for entry in found:
            grouped.setdefault(entry.category, []).append(entry)
        return self.pages.render(
            request,
            "library.html",
            status,
            query=query,
            chosen=chosen,
            categories=[(c, urlencode({"category": c})) for c in categories],
            grouped=sorted(grouped.items()),
            total=len(found),
            present=present,
            bus_problems=presence.bus_problems(present.values()),
            updates=updates,
            installed=installed,
            rates=rates,
            launches={e.app_id: launch_of(e.descriptor) for e in found},
            problems=catalog.problems,
            message=message,
            report=report,
            review=review,
        )

    async def install(self, request: Request) -> Response:
        """Install one entry by id; an MCP server from a store is shown first and installed once confirmed."""
        from aai_gateway.consent.preview import report as consent_report  # noqa: PLC0415
        from aai_gateway.discovery.wellknown import url_fetcher  # noqa: PLC0415
        from aai_gateway.library import install as installing  # noqa: PLC0415
        from aai_gateway.library.store import sha256  # noqa: PLC0415

        form = await request.form(max_fields=10)
        app_id, confirmed = form.get("app"), form.get("confirm")
        catalog = await self.pages.catalog()
        entry = catalog.get(app_id) if isinstance(app_id, str) else None
        if entry is None:
            return await self.page(request, "Choose an entry of the library to install.", status=404)
        settings = self.gateway.settings
        try:
            data, source = await installing.obtain(
                entry.app_id, catalog, url_fetcher(settings), settings.max_descriptor_bytes
            )
            app, _ = installing.check(data, source)
            launch = launch_of(app)
            if launch is not None and entry.descriptor is None and confirmed != sha256(data):
                return await self.page(request, review=(entry, launch, sha256(data)))
            done = await run_in_threadpool(installing.install, data, source, settings.aai_home)
        except AaiError as exc:
            return await self.page(request, f"{entry.app_id} was not installed: {exc.detail}", status=502)
        except (installing.EditedFile, OSError) as exc:
            return await self.page(request, f"{entry.app_id} was not installed: {exc}", status=409)
        await self.pages.rescan_apps()
        lines = consent_report(self.gateway.consent, done.app, self.gateway.platform)
        said = "is already installed" if done.outcome == "unchanged" else f"was {done.outcome}"
        return await self.page(request, f"{done.app.name} ({done.app.app_id}) {said}: {done.path}", tuple(lines))

    async def update(self, request: Request) -> Response:
        """Update one installed entry to the newer version the library or a store offers."""
        from aai_gateway.consent.preview import server_report  # noqa: PLC0415
        from aai_gateway.discovery.wellknown import url_fetcher  # noqa: PLC0415
        from aai_gateway.library.install import EditedFile, approval_source  # noqa: PLC0415
        from aai_gateway.library.updates import outdated, update  # noqa: PLC0415

        form = await request.form(max_fields=10)
        app_id = form.get("app")
        catalog = await self.pages.catalog()
        settings = self.gateway.settings
        found = {o.app_id: o for o in await run_in_threadpool(outdated, catalog, settings.aai_home)}
        item = found.get(app_id) if isinstance(app_id, str) else None
        if item is None:
            return await self.page(request, "Choose an installed entry with an update.", status=404)
        try:
            done = await update(item, catalog, url_fetcher(settings), settings.aai_home, settings.max_descriptor_bytes)
        except AaiError as exc:
            return await self.page(request, f"{item.app_id} was not updated: {exc.detail}", status=502)
        except (EditedFile, OSError) as exc:
            return await self.page(request, f"{item.app_id} was not updated: {exc}", status=409)
        await self.pages.rescan_apps()
        said = f"{item.app_id} was updated from {done.before} to {done.done.app.version}: {done.done.path}"
        lines = ["Tools:", *done.changes.lines()]
        binding = done.done.app.mcp
        if binding is not None:  # the command line it now runs, and whether it waits for a new approval
            origin = approval_source(settings.aai_home, item.app_id)
            lines += server_report(self.gateway.consent, done.done.app, binding, origin)
        return await self.page(request, said, tuple(lines))

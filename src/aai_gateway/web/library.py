"""The Library page: search and browse the library and the stores by category, install, update.

Installing or updating here is a person at their own UI: the session, CSRF and Origin checks of
`security.Guard` cover it. An entry that starts a program (an MCP server) shows the program, its
arguments and its environment before its Install button; a store's entry, whose descriptor is only
known once fetched, is shown that way first and installed only when the same bytes are confirmed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

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


@dataclass(frozen=True, slots=True)
class Launch:
    """What an MCP-server entry starts or reaches, as the page shows it before installing."""

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    url: str


def launch_of(app: Descriptor | None) -> Launch | None:
    """The program, arguments and environment (or URL) of an MCP-server descriptor; None for other apps."""
    binding = app.mcp if app is not None else None
    if binding is None:
        return None
    options = binding.options
    env = options.get("env") if isinstance(options.get("env"), Mapping) else {}
    return Launch(
        command=str(options.get("command") or ""),
        args=tuple(str(a) for a in options.get("args") or ()),
        env=tuple((str(k), _env_value(v)) for k, v in (env or {}).items()),
        url=str(options.get("url") or ""),
    )


def _env_value(value: Any) -> str:
    if isinstance(value, Mapping) and "$env" in value:
        return f"from the gateway's environment variable {value['$env']}"
    if isinstance(value, Mapping) and "$keyring" in value:
        return f"from the secret store ({value['$keyring']})"
    return str(value)


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
        review: tuple[Entry, Launch, str] | None = None,
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
        from aai_gateway.discovery.wellknown import url_fetcher  # noqa: PLC0415
        from aai_gateway.library.install import EditedFile  # noqa: PLC0415
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
        return await self.page(request, said, ("Tools:", *done.changes.lines()))

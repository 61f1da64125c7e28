"""The UI's pages: each reads the gateway and renders one template."""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from jinja2 import Environment
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse

from aai_gateway.config import Settings, config_value, setting_fields, source_text
from aai_gateway.consent import ANSWER_TITLES, Answer
from aai_gateway.consent.launches import LaunchLine
from aai_gateway.descriptor import Descriptor
from aai_gateway.errors import AaiError
from aai_gateway.history import STATUSES, HistoryUnavailable, parse_time
from aai_gateway.history.export import FORMATS, MEDIA_TYPES, lines
from aai_gateway.history.record import RUN_APP, now
from aai_gateway.history.runs import NOT_RECORDED, SHOWN
from aai_gateway.history.stats import empty
from aai_gateway.http_methods import IDEMPOTENT
from aai_gateway.service import Gateway
from aai_gateway.web.insights import RANGE_TITLES, choose, insights_context
from aai_gateway.web.library import LibraryPages
from aai_gateway.web.security import COOKIE, CSRF_FIELD, Access
from aai_gateway.web.workflows import WorkflowPages
from aai_gateway.workflows.failing import Failing
from aai_gateway.workflows.failing import failing as failing_triggers

if TYPE_CHECKING:
    from aai_gateway.library.entries import Catalog

PER_PAGE = 50
RECENT = 10
LIBRARY_BUS_TIMEOUT = 1.0
STORE_WAIT = 5.0
FILTERS = ("app", "tool", "status", "caller", "since", "until")

RETRY_POLICY = (
    "An app that is not running is started (DBus activation) and the call is tried once more.",
    f"HTTP 429 and 503 answers with Retry-After are retried for idempotent methods "
    f"({', '.join(sorted(IDEMPOTENT))}) when the wait fits in the time left.",
    "A call that timed out is never repeated.",
)

Rescan = Callable[[], Awaitable[set[str]]]


class Pages:
    def __init__(self, gateway: Gateway, access: Access, env: Environment, rescan: Rescan) -> None:
        self.gateway = gateway
        self.access = access
        self.env = env
        self.rescan_apps = rescan
        self.library = LibraryPages(self)
        self.workflows = WorkflowPages(self)

    def render(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        page = self.env.get_template(template).render(
            base=request.scope.get("root_path", ""),
            csrf=request.scope.get("state", {}).get("csrf", ""),
            csrf_field=CSRF_FIELD,
            here=request.url.path,
            consent_enabled=True,
            not_recorded=NOT_RECORDED,
            **context,
        )
        return HTMLResponse(page, status_code=status)

    # login and logout

    def login_page(self, request: Request, status: int = 200, message: str = "") -> HTMLResponse:
        return self.render(request, "login.html", status, message=message, token_file=self.access.token_file)

    async def login(self, request: Request) -> Response:
        if request.method == "POST":
            form = await request.form(max_fields=10)
            token = form.get("token")
            candidate = token if isinstance(token, str) else ""
        else:
            candidate = request.query_params.get("token", "")
            if not candidate:
                return self.login_page(request)
        session_id = self.access.redeem(candidate.strip())
        if session_id is None:
            return self.login_page(
                request, 401, "That token is not valid. Each token logs in once; use the one the file holds now."
            )
        base = request.scope.get("root_path", "")
        response = RedirectResponse(f"{base}/", status_code=303)
        response.set_cookie(COOKIE, session_id, path=base or "/", httponly=True, samesite="strict")
        return response

    async def logout(self, request: Request) -> Response:
        self.access.end(request.scope.get("state", {}).get("session"))
        base = request.scope.get("root_path", "")
        response = RedirectResponse(f"{base}/login", status_code=303)
        response.delete_cookie(COOKIE, path=base or "/", httponly=True, samesite="strict")
        return response

    # pages

    async def overview(self, request: Request) -> Response:
        scan = self.gateway.registry.scan
        unreadable = None
        failing: list[Failing] = []
        try:
            recent = await run_in_threadpool(lambda: self.gateway.history.entries(limit=RECENT))
            calls = await run_in_threadpool(self.gateway.history.count)
            failing = await run_in_threadpool(failing_triggers, self.gateway.history, now())
        except HistoryUnavailable as exc:
            recent, calls, unreadable = [], 0, str(exc)
        return self.render(
            request,
            "overview.html",
            trouble=self.gateway.history.trouble(),
            unreadable=unreadable,
            apps=self.gateway.apps(),
            broken=scan.broken,
            problems=scan.problems,
            recent=recent,
            calls=calls,
            failing=failing,
            platform=self.gateway.platform,
        )

    async def apps(
        self, request: Request, message: str = "", report: tuple[str, ...] = (), status: int = 200
    ) -> Response:
        from aai_gateway.library import presence  # noqa: PLC0415 (the library loads when a page shows it)
        from aai_gateway.library.search import search  # noqa: PLC0415
        from aai_gateway.library.updates import outdated  # noqa: PLC0415

        scan = self.gateway.registry.scan
        catalog = await self.catalog()
        offered = [e for e in search(catalog.entries, "") if e.app_id not in scan.apps]
        updates = {o.app_id: o for o in await run_in_threadpool(outdated, catalog, self.gateway.settings.aai_home)}
        present = await presence.check(offered, self.gateway.settings, timeout=LIBRARY_BUS_TIMEOUT)
        served = self.gateway.apps()
        others = [a for a in scan.apps.values() if a not in served]
        warnings = [p for p in scan.problems if p.severity == "warning"]
        counts: dict[str, int] = {}
        for problem in warnings:
            counts[problem.file] = counts.get(problem.file, 0) + 1
        return self.render(
            request,
            "apps.html",
            status,
            apps=served,
            unserved=others,
            broken=scan.broken,
            warnings=warnings,
            warning_counts=counts,
            platform=self.gateway.platform,
            library=[(e, present[e.app_id]) for e in offered],
            library_problems=catalog.problems,
            message=message,
            report=report,
            servers={s.app_id: s for s in self.gateway.server_statuses()},
            updates=updates,
        )

    async def catalog(self) -> Catalog:
        from aai_gateway.discovery.wellknown import url_fetcher  # noqa: PLC0415
        from aai_gateway.library import store  # noqa: PLC0415

        # A page does not wait web.timeout for a slow store: its entries are left out, with the problem shown.
        settings = self.gateway.settings.with_changes(web_timeout=min(self.gateway.settings.web_timeout, STORE_WAIT))
        return await store.everything(settings.store_urls, url_fetcher(settings))

    async def install(self, request: Request) -> Response:
        """Install a library entry (by id only: never a file or URL given by a form)."""
        from aai_gateway.consent.preview import report as consent_report  # noqa: PLC0415
        from aai_gateway.discovery.wellknown import url_fetcher  # noqa: PLC0415
        from aai_gateway.library import install as installing  # noqa: PLC0415

        if request.query_params.get("from") == "library":
            return await self.library.install(request)
        form = await request.form(max_fields=10)
        app_id = form.get("app")
        catalog = await self.catalog()
        if not isinstance(app_id, str) or catalog.get(app_id) is None:
            return await self.apps(request, "Choose an app of the library to install.", status=404)
        settings = self.gateway.settings
        try:
            data, source = await installing.obtain(
                app_id, catalog, url_fetcher(settings), settings.max_descriptor_bytes
            )
            done = await run_in_threadpool(installing.install, data, source, settings.aai_home)
        except AaiError as exc:
            return await self.apps(request, f"{app_id} was not installed: {exc.detail}", status=502)
        except (installing.EditedFile, OSError) as exc:
            return await self.apps(request, f"{app_id} was not installed: {exc}", status=409)
        await self.rescan_apps()
        origin = installing.approval_source(settings.aai_home, done.app.app_id)
        lines = consent_report(self.gateway.consent, done.app, self.gateway.platform, origin=origin)
        said = "is already installed" if done.outcome == "unchanged" else f"was {done.outcome}"
        return await self.apps(request, f"{done.app.name} ({done.app.app_id}) {said}: {done.path}", tuple(lines))

    async def app(self, request: Request) -> Response:
        app_id = request.path_params["app_id"]
        scan = self.gateway.registry.scan
        app = scan.apps.get(app_id)
        if app is None:
            problems = scan.broken.get(app_id)
            if problems is None:
                return self.render(request, "missing.html", 404, what=f"No app '{app_id}' was found.")
            return self.render(request, "broken.html", app_id=app_id, problems=problems)
        served = app in self.gateway.apps()
        unlisted = None
        if served and app.mcp is not None:  # an MCP server's tools are its own list: start it to read it
            try:
                app = await self.gateway.live(app)
            except AaiError as exc:
                unlisted = str(exc)
        server = next((s for s in self.gateway.server_statuses() if s.app_id == app.app_id), None)
        return self.render(
            request,
            "app.html",
            app=app,
            served=served,
            server=server,
            unlisted=unlisted,
            tools=[
                _tool_view(binding.platform, binding.automation, tool)
                for binding, tool in app.tools(self.gateway.platform)
            ],
            guide=self.gateway.guide_of(app) if served else "",
            problems=[p for p in scan.problems if p.file == app.source],
        )

    async def history(self, request: Request) -> Response:
        given, query, errors = _history_filters(request)
        page = _page_number(request.query_params.get("page", "1"))
        total = 0
        entries = []
        if not errors:
            total = await run_in_threadpool(lambda: self.gateway.history.count_entries(**query))
            entries = await run_in_threadpool(
                lambda: self.gateway.history.entries(**query, limit=PER_PAGE, offset=(page - 1) * PER_PAGE)
            )
        pages = max(1, math.ceil(total / PER_PAGE))
        kept = {k: v for k, v in given.items() if v}
        return self.render(
            request,
            "history.html",
            status=400 if errors else 200,
            filters=given,
            statuses=STATUSES,
            errors=errors,
            entries=entries,
            total=total,
            page=page,
            pages=pages,
            previous=urlencode({**kept, "page": page - 1}) if page > 1 else None,
            next=urlencode({**kept, "page": page + 1}) if page < pages else None,
            export_jsonl=urlencode({**kept, "format": "jsonl"}),
            export_csv=urlencode({**kept, "format": "csv"}),
        )

    async def export(self, request: Request) -> Response:
        """The calls the History page's filters choose, as a download streamed from the history a batch at a time."""
        _, query, errors = _history_filters(request)
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in FORMATS:
            errors.append(f"format must be one of {', '.join(FORMATS)}")
        if errors:
            return PlainTextResponse("; ".join(errors), status_code=400)
        store = self.gateway.history
        try:  # an unreadable history is said now, before the download starts
            await run_in_threadpool(lambda: store.query(limit=0))
        except HistoryUnavailable as exc:
            return PlainTextResponse(str(exc), status_code=503)
        chunks = iterate_in_threadpool(lines(store.export(**query), fmt))
        stamp = now().strftime("%Y%m%dT%H%M%SZ")
        return StreamingResponse(
            chunks,
            media_type=MEDIA_TYPES[fmt],
            headers={"content-disposition": f'attachment; filename="aai-history-{stamp}.{fmt}"'},
        )

    async def insights(self, request: Request) -> Response:
        chosen, errors = choose(request.query_params, now())
        unreadable = None
        try:
            found = await run_in_threadpool(
                self.gateway.history.stats, chosen.since, chosen.until, app=chosen.app, tool=chosen.tool
            )
        except HistoryUnavailable as exc:
            found, unreadable = empty(chosen.since, chosen.until, chosen.app, chosen.tool), str(exc)
        return self.render(
            request,
            "insights.html",
            400 if errors else 200,
            chosen=chosen,
            errors=errors,
            unreadable=unreadable,
            range_titles=RANGE_TITLES,
            **insights_context(found),
        )

    async def call(self, request: Request) -> Response:
        """A call whole; a run with its steps and undos, each linked; a step with a link to its run."""
        history = self.gateway.history
        record = await run_in_threadpool(history.get, request.path_params["call_id"])
        if record is None:
            return self.render(request, "missing.html", 404, what="No call with that id is in the history.")
        parent = record.parent
        run = None if parent is None else await run_in_threadpool(history.get, parent)
        children, steps = await run_in_threadpool(history.children, record.call_id, SHOWN)
        result = record.result
        if result is not None:
            with suppress(ValueError):  # an excerpt cut mid-value is shown as it is
                result = _pretty(json.loads(result))
        return self.render(
            request,
            "call.html",
            record=record,
            args=_pretty(record.args),
            result=result,
            run=run,
            children=children,
            steps=steps,
            shown=SHOWN,
            run_app=RUN_APP,
        )

    async def settings(self, request: Request, changed: set[str] | None = None) -> Response:
        settings = self.gateway.settings
        return self.render(
            request,
            "settings.html",
            rows=settings_rows(settings),
            scan_paths=settings.scan_paths,
            timeouts=sorted((k, v.timeout) for k, v in settings.apps.items() if v.timeout is not None),
            default_timeout=settings.default_timeout,
            retry_policy=RETRY_POLICY,
            changed=None if changed is None else sorted(changed),
            problems=self.gateway.registry.scan.problems,
        )

    async def consent(self, request: Request, message: str = "", status: int = 200) -> Response:
        store = self.gateway.consent.store
        pending = await run_in_threadpool(store.pending)
        decisions = await run_in_threadpool(store.decisions)
        servers = await run_in_threadpool(store.servers)
        waiting = await run_in_threadpool(self._waiting_servers)
        return self.render(
            request,
            "consent.html",
            status,
            pending=pending,
            decisions=decisions,
            servers=servers,
            waiting=waiting,
            answers=list(ANSWER_TITLES.items()),
            message=message,
        )

    async def decide(self, request: Request) -> Response:
        form = await request.form(max_fields=10)
        request_id, answer = form.get("request"), form.get("answer")
        if not isinstance(request_id, str) or answer not in set(Answer):
            return await self.consent(request, "Choose a pending request and an answer.", 400)
        try:
            grant = await run_in_threadpool(self.gateway.consent.store.decide, request_id, Answer(answer), source="ui")
        except LookupError as exc:
            return await self.consent(request, str(exc), 404)
        what = "allowed" if grant.decision == "allow" else "denied"
        return await self.consent(request, f"{what.capitalize()}: {grant.scope}.")

    async def revoke(self, request: Request) -> Response:
        form = await request.form(max_fields=10)
        grant_id = form.get("grant")
        store = self.gateway.consent.store
        removed = await run_in_threadpool(store.revoke_id, grant_id) if isinstance(grant_id, str) else []
        if not removed and isinstance(grant_id, str):
            approvals = await run_in_threadpool(store.revoke_server_id, grant_id)
            if approvals:
                return await self.consent(request, f"Revoked the approval of {approvals[0].app}'s command line.")
        if not removed:
            return await self.consent(request, "That decision is no longer kept.", 404)
        return await self.consent(request, f"Revoked the decision about {removed[0].app}.")

    def _waiting_servers(self) -> list[tuple[Descriptor, LaunchLine, str]]:
        """The MCP servers that start only once the user approves their command line, with where they came from."""
        found = []
        for app in self.gateway.apps():
            waiting = self.gateway.launches.waiting(app.app_id, app.mcp.options, app.mcp.auth) if app.mcp else None
            if waiting is not None:
                found.append((app, *waiting))
        return found

    async def approve_server(self, request: Request) -> Response:
        """Approve the command line the page showed; one changed since is shown again instead."""
        form = await request.form(max_fields=10)
        app_id, shown = form.get("app"), form.get("fingerprint")
        waiting = {app.app_id: line for app, line, _ in await run_in_threadpool(self._waiting_servers)}
        line = waiting.get(app_id) if isinstance(app_id, str) else None
        if line is None:
            return await self.consent(request, "That server is not waiting for an approval.", 404)
        if line.fingerprint != shown:
            return await self.consent(request, f"The command line of {line.app} changed; look at it again.", 409)
        store = self.gateway.consent.store
        await run_in_threadpool(store.approve_server, line.app, line.fingerprint, line.command_line(), source="ui")
        return await self.consent(request, f"Approved the command line of {line.app}: agents can now start it.")

    async def rescan(self, request: Request) -> Response:
        changed = await self.rescan_apps()
        return await self.settings(request, changed)


def _history_filters(request: Request) -> tuple[dict[str, str], dict[str, Any], list[str]]:
    """The History page's filters as typed, as `HistoryStore.query` takes them, and what was wrong with them."""
    given = {k: request.query_params.get(k, "").strip() for k in FILTERS}
    errors: list[str] = []
    query: dict[str, Any] = {k: given[k] or None for k in ("app", "tool", "caller")}
    if given["status"] and given["status"] not in STATUSES:
        errors.append(f"status must be one of {', '.join(STATUSES)}")
    else:
        query["status"] = given["status"] or None
    for key in ("since", "until"):
        if given[key]:
            try:
                query[key] = parse_time(given[key])
            except (ValueError, OverflowError) as exc:
                errors.append(f"{key}: {exc}")
    return given, query, errors


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _page_number(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        return 1
    return min(max(number, 1), 10**9)


def _tool_view(platform: str, automation: str, tool: Any) -> dict[str, Any]:
    schema = tool.parameters if isinstance(tool.parameters, Mapping) else {}
    props = schema.get("properties", {}) if isinstance(schema.get("properties"), Mapping) else {}
    required = set(schema.get("required", []) or [])
    params = []
    for name, raw in props.items():
        spec = raw if isinstance(raw, Mapping) else {}
        kind = spec.get("type", "any")
        params.append(
            {
                "name": name,
                "type": " | ".join(map(str, kind)) if isinstance(kind, list) else str(kind),
                "required": name in required,
                "description": str(spec.get("description", "")),
                "enum": ", ".join(json.dumps(v, ensure_ascii=False) for v in spec.get("enum", []) or []),
            }
        )
    return {
        "name": tool.name,
        "description": tool.description,
        "platform": platform,
        "automation": automation,
        "timeout": tool.timeout,
        "params": params,
    }


def settings_rows(settings: Settings) -> list[dict[str, str]]:
    """Each config.json key with its value as JSON and where it came from, then the AAI home."""
    rows = [
        {
            "key": key,
            "value": json.dumps(config_value(getattr(settings, name)), ensure_ascii=False),
            "source": source_text(settings.sources.get(key)),
        }
        for key, name in setting_fields().items()
    ]
    home = settings.sources.get("aai_home")
    rows.append({"key": "AAI home", "value": str(settings.aai_home), "source": source_text(home)})
    return rows

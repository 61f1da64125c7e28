"""The Workflows page: the saved workflows with their inputs, steps and last runs, the broken files, and a
Run form for each.

Running here is the person at their own UI (the session, CSRF and Origin checks of `security.Guard` cover
the form), through `Gateway.run_workflow` as the caller "ui" over the "web" transport: consent applies as
for any client that cannot be asked, so a step not allowed yet leaves a pending request on the Consent page.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from aai_gateway.calls import Caller
from aai_gateway.errors import AaiError
from aai_gateway.history import HistoryUnavailable, Record
from aai_gateway.workflows import inputs
from aai_gateway.workflows.approvals import fingerprint
from aai_gateway.workflows.plan import WORKFLOWS_APP
from aai_gateway.workflows.saved import Saved
from aai_gateway.workflows.triggers import tools_of

if TYPE_CHECKING:
    from aai_gateway.web.pages import Pages

UI_CALLER = Caller(name="ui", transport="web")
LAST_RUNS = 5
RUNS_READ = 500
"""Records of aai.workflows read for the page's last runs (one query, not one per workflow)."""
FIELD_PREFIX = "input."
MAX_FIELDS = 200


class WorkflowPages:
    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.gateway = pages.gateway

    async def page(
        self,
        request: Request,
        ran: dict[str, Any] | None = None,
        given: Mapping[str, str] | None = None,
        status: int = 200,
    ) -> Response:
        shelf = self.gateway.shelf
        unreadable = None
        try:
            records = await run_in_threadpool(self.gateway.history.query, app=WORKFLOWS_APP, limit=RUNS_READ)
        except HistoryUnavailable as exc:
            records, unreadable = [], str(exc)
        runs: dict[str, list[Record]] = {}
        for record in records:
            kept = runs.setdefault(record.tool, [])
            if len(kept) < LAST_RUNS:
                kept.append(record)
        return self.pages.render(
            request,
            "workflows.html",
            status,
            workflows=[self._view(saved) for saved in shelf.workflows.values()],
            broken=[p for problems in shelf.broken.values() for p in problems],
            folder=shelf.folder,
            runs=runs,
            unreadable=unreadable,
            ran=ran,
            given=given or {},
        )

    async def approve(self, request: Request) -> Response:
        """Approve (or, with `revoke`, withdraw) a workflow's triggers: the page showed every trigger and every
        tool it may run, as `aai-gateway workflow approve` prints them."""
        form = await request.form(max_fields=MAX_FIELDS)
        workflow_id = form.get("workflow")
        saved = self.gateway.shelf.get(workflow_id) if isinstance(workflow_id, str) else None
        if saved is None or not saved.triggers:
            shown = str(workflow_id)[:64]
            return await self.page(request, {"id": shown, "refused": "no such workflow with triggers"}, status=404)
        if form.get("revoke"):
            self.gateway.approvals.revoke(saved.id)
            return await self.page(request, {"id": saved.id, "approval": "withdrawn"})
        if form.get("fingerprint") != fingerprint(saved):
            refused = "its file changed since this page showed it; read it again before approving"
            return await self.page(request, {"id": saved.id, "refused": refused}, status=409)
        self.gateway.approvals.approve(saved, tools_of(saved, self.gateway.static_tool), source="ui")
        return await self.page(request, {"id": saved.id, "approval": "given"})

    async def run(self, request: Request) -> Response:
        """Run one workflow with the form's inputs (its fields, or the JSON object typed instead)."""
        form = await request.form(max_fields=MAX_FIELDS)
        workflow_id = form.get("workflow")
        saved = self.gateway.shelf.get(workflow_id) if isinstance(workflow_id, str) else None
        if saved is None:
            return await self.page(request, {"id": str(workflow_id)[:64], "problem": "No such workflow."}, status=404)
        given = {k: v for k, v in form.items() if isinstance(v, str)}
        try:
            args = _arguments(saved, form)
        except ValueError as exc:
            return await self.page(request, {"id": saved.id, "problem": f"The inputs are wrong: {exc}"}, given, 400)
        try:
            report = await self.gateway.run_workflow(saved.id, args, UI_CALLER)
        except AaiError as exc:
            ran = {"id": saved.id, "error": exc.type, "detail": exc.detail, "args": _pretty(args)}
            return await self.page(request, ran, given, 200 if exc.type == "AUTOMATION_FAILED" else 400)
        output = report.get("output")
        if output is None:  # a workflow without `output` answers its steps' results
            output = {s["id"]: s.get("result") for s in report.get("steps", []) if s.get("status") == "ok"}
        ran = {"id": saved.id, "report": report, "output": _pretty(output), "args": _pretty(args)}
        return await self.page(request, ran, given)

    def _view(self, saved: Saved) -> dict[str, Any]:
        view = _view(saved)
        if saved.triggers:
            tools = tools_of(saved, self.gateway.static_tool)
            destructive = {
                t for t in tools if (found := self.gateway.static_tool(*t.split(":", 1))) and found.destructive
            }
            view |= {
                "triggers": [str(t) for t in saved.triggers],
                "tools": [(t, t in destructive) for t in tools],
                "approved": self.gateway.approvals.current(saved) is not None,
                "fingerprint": fingerprint(saved),
            }
        return view


def _arguments(saved: Saved, form: FormData) -> dict[str, Any]:
    """The JSON textarea when it holds anything, else each filled-in field typed by the inputs schema."""
    typed = form.get("json")
    if isinstance(typed, str) and typed.strip():
        value = inputs.parse_json(typed)
        if not isinstance(value, dict):
            raise ValueError(f"the JSON must be an object of inputs, got {type(value).__name__}")
        return value
    pairs = [
        (key.removeprefix(FIELD_PREFIX), value)
        for key, value in form.multi_items()
        if key.startswith(FIELD_PREFIX) and isinstance(value, str) and value != ""
    ]
    return inputs.from_pairs(saved.inputs, pairs)


def _view(saved: Saved) -> dict[str, Any]:
    return {
        "id": saved.id,
        "name": saved.name,
        "description": saved.description,
        "fields": inputs.fields(saved.inputs),
        "steps": [(s.id, s.app, s.tool) for s in saved.plan.steps],
        "file": str(saved.file),
        "example": _pretty({f.name: f.default for f in inputs.fields(saved.inputs) if f.has_default}),
    }


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)

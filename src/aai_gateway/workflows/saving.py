"""`aai_run` with `saveAs`: a plan that ran well kept as a saved workflow, only once the user said yes."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aai_gateway.calls import Caller
from aai_gateway.consent import Answer, Question
from aai_gateway.consent.summary import safe
from aai_gateway.errors import InvalidParams
from aai_gateway.workflows.plan import WORKFLOWS_APP
from aai_gateway.workflows.runner import Report
from aai_gateway.workflows.saved import WORKFLOW_ID, Shelf

SAVE = "(save the plan)"
CHOICES: tuple[tuple[Answer, str], ...] = ((Answer.ONCE, "Save it"), (Answer.DENY, "Do not save it"))
_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def wish(raw: Any, shelf: Shelf) -> dict[str, str] | None:
    """What `saveAs` asks for ({id, name, description}), checked before anything runs; None without one."""
    if raw is None:
        return None
    given = {"id": raw} if isinstance(raw, str) else raw
    if not isinstance(given, Mapping) or not isinstance(given.get("id"), str):
        raise InvalidParams("saveAs must be a workflow id, or {id, name?, description?}; nothing was run")
    workflow_id = given["id"]
    if not WORKFLOW_ID.fullmatch(workflow_id):
        raise InvalidParams(
            f"saveAs: '{safe(workflow_id)}' is no workflow id (lowercase letters, digits, ., _ and -); nothing was run"
        )
    if shelf.get(workflow_id) is not None or (shelf.folder / f"{workflow_id}.json").exists():
        raise InvalidParams(f"saveAs: a workflow '{workflow_id}' exists already; choose another id; nothing was run")
    name, description = given.get("name", workflow_id), given.get("description", "")
    if not isinstance(name, str) or not name.strip() or not isinstance(description, str):
        raise InvalidParams("saveAs: name and description must be text; nothing was run")
    return {"id": workflow_id, "name": name.strip()[:200], "description": description[:2000]}


async def save(
    wanted: Mapping[str, str], plan: Mapping[str, Any], report: Report, shelf: Shelf, caller: Caller
) -> dict[str, Any]:
    """Ask the user, and save the plan if they agree; what happened, for the answer."""
    workflow_id = wanted["id"]
    if report.status != "ok":
        return {"id": workflow_id, "status": "notSaved", "why": "the plan did not run through"}
    if caller.ask is None:
        return {
            "id": workflow_id,
            "status": "notSaved",
            "why": "saving needs the user's yes, and this client cannot ask",
        }
    inputs = plan.get("inputs") or {}
    lines = [
        f'"{safe(caller.name)}" wants to save the plan it just ran as the workflow "{safe(wanted["name"])}" '
        f"({workflow_id}), so that it can run it again with one call.",
        f"Its {len(plan['steps'])} step(s): "
        + ", ".join(f"{safe(str(s.get('app')))}:{safe(str(s.get('tool')))}" for s in plan["steps"][:10]),
        f"It would be written to {shelf.folder / (workflow_id + '.json')}.",
    ]
    question = Question(caller.name, WORKFLOWS_APP, "Workflows", SAVE, "", (), text="\n".join(lines), choices=CHOICES)
    answer = await caller.ask(question)
    if answer is None or not answer.allows:
        why = "the user said no" if answer is not None else "the user gave no answer"
        return {"id": workflow_id, "status": "notSaved", "why": why}
    doc: dict[str, Any] = {"name": wanted["name"]}
    if wanted["description"]:
        doc["description"] = wanted["description"]
    doc["inputs"] = {
        "type": "object",
        "properties": {key: _input(value) for key, value in inputs.items()},
    }
    doc["steps"] = plan["steps"]
    for key in ("output", "onError", "timeout"):
        if key in plan:
            doc[key] = plan[key]
    try:
        path = await asyncio.to_thread(shelf.save, workflow_id, doc)
    except FileExistsError:
        return {"id": workflow_id, "status": "notSaved", "why": "a workflow with that id appeared meanwhile"}
    except (OSError, ValueError) as exc:
        return {"id": workflow_id, "status": "notSaved", "why": str(exc)[:500]}
    return {"id": workflow_id, "status": "saved", "file": str(path)}


def _input(value: Any) -> dict[str, Any]:
    kind = _JSON_TYPES.get(type(value))
    return ({"type": kind} if kind else {}) | {"default": value}

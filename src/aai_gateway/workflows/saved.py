"""Saved workflows: `~/.aai/workflows/<id>.json`, each a plan with a name and a JSON Schema of its inputs,
served together as one app, `aai.workflows`, whose tools they are (so the catalogue stays one entry).

A file that fails its schema or the plan's own checks is left out and its problems kept, each naming the
file and a JSON pointer, as a broken descriptor's are.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jsonschema import Draft7Validator

from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.descriptor.formats.common import pipe_names
from aai_gateway.descriptor.model import Annotations, Name
from aai_gateway.expressions import ExpressionError, compiled
from aai_gateway.problems import Problem, describe, pointer
from aai_gateway.workflows.plan import WORKFLOWS_APP, Plan, Problems, parse

if TYPE_CHECKING:
    from aai_gateway.workflows.schedule import At, Every

log = logging.getLogger("aai_gateway.workflows")

MAX_FILE_BYTES = 1_000_000
MAX_WORKFLOWS = 1_000
WORKFLOW_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
APP_NAMES = (Name("Workflows"), Name("Arbeitsabläufe", "de"), Name("Flux de travail", "fr"), Name("工作流", "zh"))
APP_DESCRIPTION = "The user's saved workflows: each runs several app operations as one, results passed along"


@dataclass(frozen=True, slots=True)
class Trigger:
    """One thing that starts a saved workflow: an app's event, a timer or a file change."""

    spec: Mapping[str, Any]
    index: int
    schedule: Every | At | None = None
    """A timer's schedule (`every`, `at`); None for an event or a file."""

    @property
    def kind(self) -> str:
        for kind in ("event", "every", "at", "start"):
            if kind in self.spec:
                return kind
        return "file"

    @property
    def debounce(self) -> float:
        return float(self.spec.get("debounce", 0))

    @property
    def per_minute(self) -> int:
        return int(self.spec.get("maxPerMinute", DEFAULT_PER_MINUTE))

    @property
    def overlap(self) -> bool:
        return bool(self.spec.get("overlap", False))

    def __str__(self) -> str:
        spec = self.spec
        if self.kind == "event":
            shown = f"{spec['app']}:{spec['event']}"
            return shown + (f" where {spec['filter']}" if spec.get("filter") else "")
        if self.schedule is not None:
            return str(self.schedule)
        if self.kind == "start":
            return "the gateway's start"
        return f"changes under {spec['file']}"


DEFAULT_PER_MINUTE = 6


@dataclass(frozen=True, slots=True)
class Saved:
    id: str
    names: tuple[Name, ...]
    description: str
    inputs: Mapping[str, Any]
    plan: Plan
    document: Mapping[str, Any]
    file: Path
    aliases: tuple[str, ...] = ()
    triggers: tuple[Trigger, ...] = ()
    """What starts it without an agent (`on`), once the user approved it."""

    @property
    def name(self) -> str:
        return self.names[0].text if self.names else self.id

    def tool(self) -> Tool:
        names = " | ".join(n.text for n in self.names[1:])
        also = f" (also: {names})" if names else ""
        steps = ", ".join(f"{s.app}:{s.tool}" for s in self.plan.steps[:8])
        more = f" and {len(self.plan.steps) - 8} more" if len(self.plan.steps) > 8 else ""
        description = f"{self.name}{also}. {self.description} Runs {steps}{more}.".replace(". .", ".")
        return Tool(
            name=self.id,
            description=description.strip(),
            parameters=self.inputs,
            annotations=Annotations(open_world=True),
            aliases=(*self.aliases, *(n.text for n in self.names)),
        )


@cache
def validator() -> Draft7Validator:
    text = files("aai_gateway.workflows").joinpath("workflow.schema.json").read_text("utf-8")
    return Draft7Validator(json.loads(text))


def read(path: Path) -> Saved | list[Problem]:
    """The workflow in `path`, or every problem found in it."""
    source = str(path)
    stem = path.name.removesuffix(".json")
    if not WORKFLOW_ID.fullmatch(stem):
        return [Problem(source, "", f"'{stem}' is no workflow id: use lowercase letters, digits, ., _ and -")]
    try:
        data = _bounded_read(path)
    except OSError as exc:
        return [Problem(source, "", f"cannot be read: {exc.strerror or exc}")]
    if data is None:
        return [Problem(source, "", "is not a regular file")]
    if len(data) > MAX_FILE_BYTES:
        return [Problem(source, "", f"is larger than {MAX_FILE_BYTES:,} bytes")]
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return [Problem(source, "", f"is not JSON: {exc}")]
    return checked(doc, stem, path)


def _bounded_read(path: Path) -> bytes | None:
    """At most MAX_FILE_BYTES + 1 bytes of `path`; None when it is no regular file (a FIFO would block)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(MAX_FILE_BYTES + 1)


def checked(doc: Any, workflow_id: str, path: Path) -> Saved | list[Problem]:
    """`doc` as the workflow `workflow_id`, or every problem with its pointer."""
    source = str(path)
    try:
        errors = sorted(validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    except RecursionError:
        return [Problem(source, "", "is nested too deeply")]
    if errors:
        return [Problem(source, pointer(e.absolute_path), describe(e)) for e in errors]
    assert isinstance(doc, Mapping)
    problems = Problems()
    plan = parse({k: v for k, v in doc.items() if k in ("steps", "output", "onError", "timeout")}, problems)
    inputs: Mapping[str, Any] = doc.get("inputs") or {"type": "object", "properties": {}}
    found = [Problem(source, _pointer_of(p, doc), p) for p in problems.found]
    if plan is not None:
        found += _unknown_inputs(plan, inputs, source, doc)
    triggers: list[Trigger] = []
    for index, spec in enumerate(doc.get("on") or []):
        try:
            triggers.append(_trigger(spec, index))
        except (ValueError, ExpressionError) as exc:  # ScheduleError is a ValueError
            found.append(Problem(source, pointer(["on", index]), str(exc)))
    if found or plan is None:
        return found
    names = _names(doc["name"])
    return Saved(
        workflow_id,
        names,
        str(doc.get("description", "")),
        {"type": "object", **inputs},
        plan,
        doc,
        path,
        tuple(doc.get("aliases", ())),
        tuple(triggers),
    )


def _trigger(spec: Mapping[str, Any], index: int) -> Trigger:
    from aai_gateway.workflows.schedule import at, every  # noqa: PLC0415 (time zones load for timers only)

    if "every" in spec:
        return Trigger(spec, index, every(str(spec["every"])))
    if "at" in spec:
        return Trigger(spec, index, at(str(spec["at"])))
    if spec.get("filter"):
        compiled(str(spec["filter"]), "filter")
    return Trigger(spec, index)


def _names(raw: Any) -> tuple[Name, ...]:
    if isinstance(raw, str):
        return pipe_names(raw)
    return tuple(Name(text, lang) for lang, text in raw.items())


def _unknown_inputs(plan: Plan, inputs: Mapping[str, Any], source: str, doc: Mapping[str, Any]) -> list[Problem]:
    """Queries reading an input the inputs schema does not declare."""
    from aai_gateway.expressions import check, heads  # noqa: PLC0415 (parse has read them once already)

    declared = set((inputs.get("properties") or {}).keys())
    problems: list[Problem] = []
    for index, step in enumerate(plan.steps):
        for where, expression in check(step.args, f"steps[{index}].args"):
            for path in heads(expression):
                if len(path) > 1 and path[0] == "inputs" and path[1] not in declared:
                    problems.append(
                        Problem(
                            source, _pointer_of(where, doc), f"reads inputs.{path[1]}, which inputs does not declare"
                        )
                    )
    return problems


_TOKEN = re.compile(r"^([A-Za-z_]\w*)|\.([^.\[\]]+)|\[(\d+)\]|\[id=([^\]]+)\]")


def _pointer_of(where: str, doc: Mapping[str, Any]) -> str:
    """`steps[id=read].args.text: …` → `/steps/0/args/text` (a problem names its place in words too)."""
    head = where.split(": ", 1)[0]
    steps = doc.get("steps")
    ids = [s.get("id") if isinstance(s, Mapping) else None for s in steps] if isinstance(steps, list) else []
    parts: list[str | int] = []
    for match in _TOKEN.finditer(head):
        name, key, index, step_id = match.groups()
        if step_id is not None:
            parts.append(ids.index(step_id) if step_id in ids else step_id)
        else:
            parts.append(name or key or index)
    return pointer(parts)


class Shelf:
    """The saved workflows of one AAI home, read again on `load`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.workflows: dict[str, Saved] = {}
        self.broken: dict[str, list[Problem]] = {}
        self._app: Descriptor | None = None
        self._seen: dict[str, tuple[float, int]] = {}

    def load(self) -> bool:
        """Read the folder; whether anything changed since the last load."""
        seen: dict[str, tuple[float, int]] = {}
        paths: list[Path] = []
        try:
            for path in sorted(self.folder.glob("*.json"))[:MAX_WORKFLOWS]:
                try:
                    stat = path.stat()
                except OSError:
                    continue
                seen[path.name] = (stat.st_mtime, stat.st_size)
                paths.append(path)
        except OSError:
            pass
        if seen == self._seen and (seen or not self.workflows):
            return False
        self._seen = seen
        workflows: dict[str, Saved] = {}
        broken: dict[str, list[Problem]] = {}
        for path in paths:
            found = read(path)
            if isinstance(found, Saved):
                workflows[found.id] = found
            else:
                broken[path.name.removesuffix(".json")] = found
                log.warning("workflow %s is left out: %s", path, "; ".join(str(p) for p in found[:3]))
        changed = workflows.keys() != self.workflows.keys() or any(
            workflows[k].document != self.workflows[k].document for k in workflows
        )
        self.workflows, self.broken = workflows, broken
        if changed:
            self._app = None
        return changed

    def get(self, workflow_id: str) -> Saved | None:
        return self.workflows.get(workflow_id)

    def app(self, platform: str) -> Descriptor | None:
        """The workflows as one app, each a tool; None when there are none."""
        if not self.workflows:
            return None
        if self._app is None or platform not in self._app.bindings:
            tools = tuple(saved.tool() for saved in self.workflows.values())
            binding = Binding(platform, "workflow", tools)
            self._app = Descriptor(
                WORKFLOWS_APP,
                APP_NAMES,
                APP_DESCRIPTION,
                {platform: binding},
                "multi",
                aliases=("workflow", "automation", "routine", "macro"),
                source=str(self.folder),
            )
        return self._app

    def save(self, workflow_id: str, doc: Mapping[str, Any]) -> Path:
        """Write a new workflow file atomically; FileExistsError if the id is taken."""
        if not WORKFLOW_ID.fullmatch(workflow_id):
            raise ValueError(f"'{workflow_id}' is no workflow id: use lowercase letters, digits, ., _ and -")
        found = checked(doc, workflow_id, self.folder / f"{workflow_id}.json")
        if not isinstance(found, Saved):
            raise ValueError("; ".join(str(p) for p in found[:5]))
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"{workflow_id}.json"
        handle, temporary = tempfile.mkstemp(prefix=f".{workflow_id}.", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(doc, out, ensure_ascii=False, indent=2)
                out.write("\n")
            os.link(temporary, target)  # fails if the id is taken, never overwriting a file
        finally:
            Path(temporary).unlink(missing_ok=True)
        self.load()
        return target

"""`workflow list|run|validate|examples`: the saved workflows of `~/.aai/workflows`, as a person sees them;
and the check `validate PATH` makes of a workflow file."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from aai_gateway import logs
from aai_gateway.cli.common import (
    CLI_CALLER,
    fail,
    history_store,
    on_gateway,
    result_text,
    settings_of,
    terminal_safe,
)
from aai_gateway.errors import AaiError
from aai_gateway.history import HistoryUnavailable
from aai_gateway.problems import Problem
from aai_gateway.service import Gateway
from aai_gateway.workflows import inputs, shipped
from aai_gateway.workflows.saved import MAX_FILE_BYTES, MAX_WORKFLOWS, Saved, Shelf, read

if TYPE_CHECKING:
    from aai_gateway.workflows.failing import Failing


@click.group(short_help="List, run, check and install saved workflows (~/.aai/workflows).")
def workflow() -> None:
    """Saved workflows: plans kept as `~/.aai/workflows/<id>.json`, which agents run as tools of the app
    aai.workflows."""


@workflow.command("list", short_help="List the saved workflows and the files that are broken.")
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """List the saved workflows (id, name, inputs, steps, triggers), then each broken file with its problems.

    A trigger whose latest run failed is marked, with how many of its runs failed in the last 24 hours
    and the last error (`aai-gateway history show ID` prints that run)."""
    shelf = Shelf(settings_of(ctx).workflows_dir)
    shelf.load()
    failing = _failing(ctx)
    if as_json:
        rows = {
            "workflows": [
                _saved_json(s) | {"failing": [f.to_json() for f in failing.get(s.id, [])]}
                for s in shelf.workflows.values()
            ],
            "broken": {k: [p.as_dict() for p in v] for k, v in shelf.broken.items()},
        }
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    for saved in shelf.workflows.values():
        click.echo(_saved_text(saved))
        for found in failing.get(saved.id, []):
            click.echo(terminal_safe(_failing_text(found)))
    for problems in shelf.broken.values():
        for problem in problems:
            click.echo(f"!! {terminal_safe(str(problem))}")
    if not shelf.workflows and not shelf.broken:
        click.echo(f"No saved workflows in {shelf.folder}; `aai-gateway workflow examples --install` adds some.")


@workflow.command(short_help="Run a saved workflow and print how each step ended and its output.")
@click.argument("workflow_id", metavar="ID")
@click.argument("args", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the whole report (status, steps, output) as JSON.")
@click.pass_context
def run(ctx: click.Context, workflow_id: str, args: tuple[str, ...], as_json: bool) -> None:
    """Run the workflow ID, e.g. `aai-gateway workflow run save-power below=30` or `... '{"below": 30}'`.

    ARGS are one JSON object, or key=value pairs typed by the workflow's inputs schema. How each step
    ended goes to stderr, the output to stdout; exit 1 when the run failed (it is rolled back, as the
    workflow says)."""
    settings = settings_of(ctx)
    logs.configure(
        settings.log_level, settings.aai_home / "logs", stderr_level=None if ctx.obj.get("log_level") else "warning"
    )

    async def run_it(gateway: Gateway) -> Any:
        saved = gateway.shelf.get(workflow_id)
        given = _arguments(args, saved.inputs if saved is not None else {})
        return await gateway.run_workflow(workflow_id, given, CLI_CALLER)

    try:
        report = on_gateway(settings, run_it)
    except BadArgs as exc:
        fail(f"ARGS: {exc}")
    except AaiError as exc:
        fail("\n".join(terminal_safe(line) for line in f"{exc} [{exc.code} {exc.type}]".splitlines()), 1)
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    for line in step_lines(report):
        click.echo(terminal_safe(line), err=True)
    output = report.get("output")
    if output is None:
        output = {s["id"]: s.get("result") for s in report.get("steps", []) if s.get("status") == "ok"}
    click.echo(result_text(output, "workflow", workflow_id, as_json=False))


class BadArgs(ValueError):
    """ARGS that are no JSON object and no key=value pairs, or a value not of its input's type."""


def _arguments(args: tuple[str, ...], schema: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return _parsed(args, schema)
    except ValueError as exc:
        raise BadArgs(str(exc)) from None


def _parsed(args: tuple[str, ...], schema: Mapping[str, Any]) -> dict[str, Any]:
    if len(args) == 1 and args[0].lstrip().startswith("{"):
        value = inputs.parse_json(args[0])
        if not isinstance(value, dict):
            raise ValueError("must be one JSON object or key=value pairs")
        return value
    pairs = []
    for arg in args:
        name, sep, text = arg.partition("=")
        if not sep or not name:
            raise ValueError(f"{terminal_safe(arg[:80])!r} is neither a JSON object nor key=value")
        pairs.append((name, text))
    return inputs.from_pairs(schema, pairs)


def step_lines(report: Mapping[str, Any]) -> list[str]:
    """`- read (dev.aai.echo:echo): ok in 3 ms`, a line per step of a run's report."""
    lines = [f"{report.get('status')} in {report.get('durationMs', 0):.0f} ms"]
    for step in report.get("steps", []):
        line = f"- {step['id']} ({step['app']}:{step['tool']}): {step['status']}"
        if "durationMs" in step:
            line += f" in {step['durationMs']:.0f} ms"
        if step.get("error"):
            line += f": {step['error']['type']}: {step['error']['detail']}"
        elif step.get("reason"):
            line += f" ({step['reason']})"
        lines.append(line)
    return lines


@workflow.command(short_help="Check workflow files; exit 1 if any is invalid.")
@click.argument("files_", metavar="[FILE]...", nargs=-1, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.pass_context
def validate(ctx: click.Context, files_: tuple[Path, ...], as_json: bool) -> None:
    """Check workflow files (by default every file of the workflows folder) against the workflow schema and
    the plan's checks; each problem is printed with its file#pointer. Exit 1 if any is invalid."""
    if files_:
        paths = list(files_)
    else:
        folder = settings_of(ctx).workflows_dir
        paths = sorted(folder.glob("*.json"))[:MAX_WORKFLOWS] if folder.is_dir() else []
        if not paths and not as_json:
            click.echo(f"No workflow files in {folder}.")
    results = [(path, read(path)) for path in paths]
    if as_json:
        click.echo(json.dumps([checked_json(p, r) for p, r in results], ensure_ascii=False, indent=2))
    else:
        for path, found in results:
            click.echo(checked_text(path, found))
        if results:
            bad = sum(1 for _, r in results if not isinstance(r, Saved))
            click.echo(f"\n{len(results) - bad} valid, {bad} invalid")
    sys.exit(1 if any(not isinstance(r, Saved) for _, r in results) else 0)


def checked_text(path: Path, found: Saved | list[Problem]) -> str:
    """`ok  FILE: workflow ID (N steps)`, or each problem on a line of its own (control characters escaped)."""
    if isinstance(found, Saved):
        return terminal_safe(f"ok  {path}: workflow {found.id} ({found.name}; {_steps(found)})")
    return "\n".join(terminal_safe(f"!! {problem}") for problem in found)


def checked_json(path: Path, found: Saved | list[Problem]) -> dict[str, Any]:
    return {
        "file": str(path),
        "valid": isinstance(found, Saved),
        "workflow": found.id if isinstance(found, Saved) else None,
        "problems": [] if isinstance(found, Saved) else [p.as_dict() for p in found],
    }


def is_workflow_file(path: Path) -> bool:
    """A `.json` in a folder named `workflows`, or a JSON object with `steps` and no `tools`."""
    if path.suffix != ".json":
        return False
    try:
        if not path.is_file():  # a folder, a FIFO or a device is no workflow, and is never opened here
            return False
        if path.parent.name == "workflows":
            return True
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        doc = json.loads(data) if len(data) <= MAX_FILE_BYTES else None
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and "steps" in doc and "tools" not in doc and "platforms" not in doc


@workflow.command(short_help="List the example workflows shipped with aai-gateway; --install copies them.")
@click.option("--install", "install_", is_flag=True, help="Copy them into the workflows folder (never overwriting).")
@click.pass_context
def examples(ctx: click.Context, install_: bool) -> None:
    """List the example workflows shipped with aai-gateway; with --install copy them into the workflows folder,
    leaving a file of the same name there as it is."""
    for found in shipped.examples():
        if isinstance(found, Saved):
            click.echo(_saved_text(found))
        else:
            click.echo(checked_text(Path("examples"), found))
    if not install_:
        click.echo("\n`aai-gateway workflow examples --install` copies them into the workflows folder.")
        return
    click.echo("")
    folder = settings_of(ctx).workflows_dir
    copied = shipped.install(folder)
    for each in copied:
        if each.outcome == "installed":
            click.echo(f"installed {each.id}: {each.path}")
        elif each.outcome == "kept":
            click.echo(f"kept {each.id}: {each.path} is already there, left as it is")
        else:
            click.echo(f"!! {each.id} was not installed: {each.path}: {each.why}", err=True)
    if any(c.outcome == "failed" for c in copied):
        sys.exit(1)


def _saved_text(saved: Saved) -> str:
    lines = [f"{saved.id}  {saved.name}  ({_steps(saved)}: {', '.join(_apps(saved.plan.steps))})"]
    if saved.description:
        lines.append(f"    {saved.description}")
    found = inputs.fields(saved.inputs)
    lines.append("    inputs: " + (", ".join(f.text() for f in found) if found else "none"))
    if saved.triggers:
        lines.append("    starts on: " + "; ".join(str(t) for t in saved.triggers))
    return "\n".join(terminal_safe(line) for line in lines)


def _failing(ctx: click.Context) -> dict[str, list[Failing]]:
    from aai_gateway.workflows.failing import failing

    """The failing triggers by workflow; none when the history cannot be read (said on stderr)."""
    try:
        found = failing(history_store(ctx), datetime.now(UTC))
    except HistoryUnavailable as exc:
        click.echo(f"aai-gateway: which triggers fail is not known: {exc}", err=True)
        return {}
    by_workflow: dict[str, list[Failing]] = {}
    for each in found:
        by_workflow.setdefault(each.workflow, []).append(each)
    return by_workflow


def _failing_text(found: Failing) -> str:
    last = found.last
    return (
        f"    !! failing: {found.trigger}: {found.failures} of {found.runs} runs in the last 24 hours failed; "
        f"the last at {last.time:%Y-%m-%d %H:%M:%S} UTC ({last.call_id}): {found.error}"
    )


def _steps(saved: Saved) -> str:
    count = len(saved.plan.steps)
    return f"{count} step{'s' if count != 1 else ''}"


def _apps(steps: Iterable[Any]) -> list[str]:
    return [f"{s.app}:{s.tool}" for s in steps]


def _saved_json(saved: Saved) -> dict[str, Any]:
    return {
        "id": saved.id,
        "name": saved.name,
        "description": saved.description,
        "file": str(saved.file),
        "inputs": [
            {"name": f.name, "type": f.type, "required": f.required} | ({"default": f.default} if f.has_default else {})
            for f in inputs.fields(saved.inputs)
        ],
        "steps": [{"id": s.id, "app": s.app, "tool": s.tool} for s in saved.plan.steps],
    }


@workflow.command(short_help="Let a workflow's triggers start it: shows every tool it may run and every trigger.")
@click.argument("workflow_id", metavar="ID")
@click.option("--yes", is_flag=True, help="Approve without asking (after reading what is printed).")
@click.pass_context
def approve(ctx: click.Context, workflow_id: str, yes: bool) -> None:
    """Approve the workflow ID to start on its own triggers (`on`) in a long-lived gateway (`aai-gateway
    serve`). Nobody is asked when a trigger starts it, so this approval names every tool it may run (its
    steps, their undos and the reads they need) and every trigger. It holds for the file as it is now:
    editing the file withdraws it until approved again."""
    settings = settings_of(ctx)

    async def work(gateway: Gateway) -> None:
        from aai_gateway.workflows.triggers import tools_of

        saved = gateway.shelf.get(workflow_id)
        if saved is None:
            fail(f"no saved workflow '{workflow_id}' in {gateway.shelf.folder} (see `aai-gateway workflow list`)")
        if not saved.triggers:
            fail(
                f"workflow {workflow_id} has no triggers (`on`): agents and `workflow run` start it; nothing to approve"
            )
        tools = tools_of(saved, gateway.static_tool)
        click.echo(f"Workflow {workflow_id} ({terminal_safe(saved.name)}), from {saved.file}")
        click.echo("It starts on its own, with nobody asked, on:")
        for trigger in saved.triggers:
            click.echo(f"  {terminal_safe(str(trigger))}")
        click.echo("and may run these tools:")
        for tool in tools:
            app, _, name = tool.partition(":")
            found = gateway.static_tool(app, name)
            mark = " [destructive]" if found is not None and found.destructive else ""
            click.echo(f"  {terminal_safe(tool)}{mark}")
        if not yes and not click.confirm("Approve it?", default=False):
            click.echo("Not approved.")
            sys.exit(1)
        gateway.approvals.approve(saved, tools, source="cli")
        click.echo(
            f"Approved. Editing {saved.file.name} withdraws the approval; `aai-gateway workflow revoke "
            f"{workflow_id}` does too."
        )

    on_gateway(settings, work)


@workflow.command(short_help="Withdraw the approval of a workflow's triggers.")
@click.argument("workflow_id", metavar="ID")
@click.pass_context
def revoke(ctx: click.Context, workflow_id: str) -> None:
    """Withdraw the approval of the workflow ID: its triggers no longer start it."""
    from aai_gateway.workflows.approvals import Approvals

    if Approvals(settings_of(ctx).aai_home).revoke(workflow_id):
        click.echo(f"Workflow {workflow_id}'s triggers no longer start it.")
    else:
        click.echo(f"Workflow {workflow_id} was not approved.")

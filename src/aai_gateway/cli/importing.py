"""`aai-gateway import`: bring the MCP servers of other clients in as apps (see authoring/mcp_import.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from aai_gateway import paths
from aai_gateway.cli.common import fail, settings_of

if TYPE_CHECKING:
    from aai_gateway.authoring.mcp_clients import Problem
    from aai_gateway.authoring.mcp_import import Plan, Planned, Store
    from aai_gateway.config import Settings

_STATUS = {
    "new": ("new", "new"),
    "unchanged": ("unchanged", "unchanged"),
    "differs": ("exists and differs: kept (--force replaces it)", "exists and differs: kept (--force replaces it)"),
    "overwrite": ("replaces the existing one", "replaced the existing one"),
    "written": ("", "written"),
    "overwritten": ("", "overwritten"),
    "failed": ("", "failed"),
}


@click.command("import", short_help="Make the MCP servers of Claude, Cursor, VS Code or Codex apps of the gateway.")
@click.argument("files", metavar="[FILE]...", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--from",
    "client",
    type=click.Choice(["claude-desktop", "claude-code", "cursor", "vscode", "codex"]),
    help="Only this client's files; with FILE, read FILE as this client's format.",
)
@click.option(
    "--write", "do_write", is_flag=True, help="Write the descriptors (and store secrets); without it, a dry run."
)
@click.option(
    "--secrets",
    type=click.Choice(["keyring", "env"]),
    help='Where secret values go: the OS keyring ({"$keyring": …}) or environment variables you set '
    '({"$env": …}). Default: keyring if one is usable, else env.',
)
@click.option("--force", is_flag=True, help="Replace descriptors (and keyring items) that exist and differ.")
@click.option(
    "--project",
    is_flag=True,
    help="Without FILE, read the project files of the current folder too (.mcp.json, .vscode/mcp.json, …).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan (or what was written) as JSON.")
@click.pass_context
def import_servers(
    ctx: click.Context,
    files: tuple[Path, ...],
    client: str | None,
    do_write: bool,
    secrets: str | None,
    force: bool,
    project: bool,
    as_json: bool,
) -> None:
    """Write one descriptor (~/.aai/mcp.<name>/aai.json) per MCP server that FILE lists, or, without FILE,
    that Claude Desktop, Claude Code, Cursor, VS Code and Codex list for this user (and, with --project,
    in the project files of the current folder, which a cloned repository may have brought). Secrets are
    moved out of the descriptors into the keyring or environment variables. Prints the one entry that
    replaces those servers in each client.

    A dry run unless --write. Exit 1 when a file or a server could not be imported, or a descriptor
    differs from the one on disk (and --force was not given).
    """
    from aai_gateway.authoring import mcp_clients, mcp_import

    settings = settings_of(ctx)
    env = paths.environ()
    clients = [client] if client else tuple(mcp_clients.CLIENTS)
    unread: list[tuple[str, Path]] = []
    if files:
        sources: list[tuple[str | None, Path]] = [(client, path) for path in files]
    else:
        sources = list(mcp_clients.known_files(env, Path.cwd(), clients, project=project))
        if not project:
            unread = mcp_clients.project_files(env, Path.cwd(), clients)
        if not sources:
            which = mcp_clients.CLIENTS[client] if client else ", ".join(mcp_clients.CLIENTS.values())
            where = "for this user" if unread else "for this user or in this folder"
            click.echo(f"No MCP server list of {which} found {where}; give FILE.")
            _print_unread(unread)
            return
    found = mcp_clients.read(sources, env)
    mode, store, why = _secret_store(secrets)
    result = mcp_import.plan(found, settings.aai_home, env, mode, store, force=force, gateway_port=settings.http_port)
    if do_write:
        mcp_import.write(result, store)
        _approve(result, settings)
    entries = {c: mcp_import.client_entry(c) for c in result.clients()}
    if as_json:
        report = _as_json(result, do_write, entries)
        why_not = "a project file of this folder; --project reads it"
        report["notRead"] = [{"client": c, "path": str(p), "why": why_not} for c, p in unread]
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _print(result, do_write, entries, why)
        _print_unread(unread)
    if result.problems or any(p.status in ("differs", "failed") for p in result.servers):
        ctx.exit(1)


def _approve(result: Plan, settings: Settings) -> None:
    """The command lines written were shown in the dry run and are the user's own: approve them, so that one
    replacing a store's descriptor of the same id starts without a question (see consent/launches.py)."""
    from aai_gateway.consent import ConsentGate
    from aai_gateway.consent.launches import launch_line

    store = ConsentGate(settings).store
    for planned in result.servers:
        if planned.status in ("written", "overwritten", "unchanged"):
            options = {k: v for k, v in planned.descriptor["execution"].items() if k != "type"}
            line = launch_line(planned.app_id, options, planned.descriptor.get("auth"))
            store.approve_server(planned.app_id, line.fingerprint, line.command_line(), source="import")


def _secret_store(option: str | None) -> tuple[str, Store | None, str]:
    """`(mode, store, why)`: the keyring when asked for or usable, else environment variables."""
    if option == "env":
        return "env", None, ""
    from aai_gateway.auth.secrets import keyring_store

    try:
        return "keyring", keyring_store(), ""
    except LookupError as exc:
        if option == "keyring":
            fail(f"--secrets keyring: no keyring is usable ({exc}); use --secrets env", 1)
        return "env", None, f"no keyring is usable ({exc}), so secrets become environment variables"


def _print_unread(unread: list[tuple[str, Path]]) -> None:
    from aai_gateway.authoring.mcp_clients import CLIENTS

    if unread:
        click.echo(
            "\nNot read: the project files of this folder (a repository may have brought them; --project reads them):"
        )
    for client, path in unread:
        click.echo(f"  {CLIENTS[client]:<15} {path}")


def _print(result: Plan, written: bool, entries: dict[str, str], why: str) -> None:
    from aai_gateway.authoring.mcp_clients import CLIENTS

    if result.files:
        click.echo(f"Read {len(result.files)} file(s):")
    for client, path in result.files:
        click.echo(f"  {CLIENTS[client]:<15} {path}")
    if not (result.servers or result.problems or result.skipped):
        click.echo("No MCP servers in them.")
    if result.servers:
        verb = "Descriptors" if written else "Would write (a dry run; --write writes)"
        click.echo(f"\n{verb}:")
    for planned in result.servers:
        _print_server(planned, written)
    if why:
        click.echo(f"\nNote: {why}.")
    variables = result.variables()
    if variables:
        click.echo(
            "\nSet these environment variables where the gateway runs (your shell profile, a service file, "
            "or the env of the client entry below):"
        )
        for name, purpose in variables:
            click.echo(f"  {name:<24} {purpose}")
    if result.skipped:
        click.echo("\nLeft out:")
        for problem in result.skipped:
            click.echo(f"  {problem}")
    if result.problems:
        click.echo("\nNot imported:", err=True)
        for problem in result.problems:
            click.echo(f"  {problem}", err=True)
    for client, sources in result.clients().items():
        by_file: dict[str, list[str]] = {}
        for source in sources:
            scope = f" (project {source.scope})" if source.scope else ""
            by_file.setdefault(f"{source.file}{scope}", []).append(source.name)
        click.echo(f"\n{CLIENTS[client]}: replace the imported servers with the gateway's one entry:")
        for file, names in by_file.items():
            click.echo(f"  in {file}, remove {', '.join(names)}")
        if client == "claude-code":
            click.echo("  and add it with `claude mcp add aai -- aai-gateway --mcp`, or this entry:")
        else:
            click.echo("  and add:")
        click.echo("\n".join(f"    {line}" for line in entries[client].splitlines()))
    if not written and result.servers:
        click.echo("\nNothing was written: run again with --write.")
        click.echo("The command lines it writes count as approved: they start on first use, unasked about the program.")


def _print_server(planned: Planned, written: bool) -> None:
    from aai_gateway.authoring.mcp_clients import CLIENTS
    from aai_gateway.consent.launches import launch_line

    status = _STATUS[planned.status][1 if written else 0]
    click.echo(f"  {planned.app_id}  {planned.path}  [{status}]")
    execution = planned.descriptor["execution"]
    shown = {m.place: m.shown for m in planned.moved}  # secrets masked, references by name
    if "url" in execution:
        click.echo(f"      streamable HTTP: {shown.get('url', execution['url'])}")
    else:
        args = [shown.get(f"args[{i}]", a) for i, a in enumerate(execution["args"])]
        click.echo(f"      stdio: {' '.join([execution['command'], *args])}")
        added = launch_line(planned.app_id, execution).environment()
        if added:
            click.echo(f"      environment: {added}")
    froms = ", ".join(f"{CLIENTS[s.client]} ({s.name})" for s in planned.sources)
    click.echo(f"      from: {froms}")
    for moved in planned.moved:
        where = f"keyring item {moved.key}" if moved.to == "keyring" else f"environment variable {moved.key}"
        value = f" ({moved.shown})" if moved.place.startswith(("args", "url")) else ""
        click.echo(f"      {moved.place}{value} → {where}")
    for note in planned.notes:
        click.echo(f"      note: {note}")
    if planned.backup is not None:
        click.echo(f"      the old one is kept in {planned.backup}")


def _as_json(result: Plan, written: bool, entries: dict[str, str]) -> dict[str, Any]:
    def problem(p: Problem) -> dict[str, str]:
        return {"where": p.where, "message": p.message}

    return {
        "write": written,
        "secrets": result.secrets,
        "files": [{"client": c, "path": str(p)} for c, p in result.files],
        "servers": [
            {
                "appId": planned.app_id,
                "path": str(planned.path),
                "status": planned.status,
                "sources": [
                    {"client": s.client, "file": str(s.file), "name": s.name, "project": s.scope}
                    for s in planned.sources
                ],
                "secrets": [
                    {"field": m.place, "to": m.to, "key": m.key, "note": m.note, "shown": m.shown}
                    for m in planned.moved
                ],
                "notes": planned.notes,
                "backup": str(planned.backup) if planned.backup else None,
                "descriptor": planned.descriptor,
            }
            for planned in result.servers
        ],
        "variables": [{"name": n, "for": p} for n, p in result.variables()],
        "skipped": [problem(p) for p in result.skipped],
        "problems": [problem(p) for p in result.problems],
        "clientEntries": entries,
    }

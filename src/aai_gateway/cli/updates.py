"""`outdated` (installed apps with a newer library or store version) and `update [ID]...` (install those)."""

from __future__ import annotations

import asyncio
import json

import click

from aai_gateway.cli.common import fail, settings_of
from aai_gateway.cli.library import fetcher, load_catalog
from aai_gateway.errors import AaiError


@click.command(short_help="List installed apps the library or a store offers in a newer version.")
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON.")
@click.pass_context
def outdated(ctx: click.Context, as_json: bool) -> None:
    """List the installed apps (in the AAI home) whose library or store entry has a newer version.

    Nothing is changed: `aai-gateway update` installs the newer versions.
    """
    from aai_gateway.library.updates import outdated as find

    settings = settings_of(ctx)
    catalog = load_catalog(settings)
    for problem in catalog.problems:
        click.echo(f"problem: {problem}", err=True)
    found = find(catalog, settings.aai_home)
    if as_json:
        rows = [
            {"id": o.app_id, "installed": o.installed, "available": o.entry.version, "source": o.entry.source}
            for o in found
        ]
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    for item in found:
        click.echo(f"{item.app_id}  {item.installed} -> {item.entry.version}  ({item.entry.source_text})")
    if not found:
        click.echo("Every installed app is up to date with the library and the stores.")
        return
    click.echo(f"\n{len(found)} update{'s' if len(found) != 1 else ''}. Install with: aai-gateway update [ID]...")


@click.command(short_help="Install the newer library or store version of installed apps.")
@click.argument("ids", metavar="[ID]...", nargs=-1)
@click.option("--force", is_flag=True, help="Also replace descriptors that were edited (a copy of each is kept).")
@click.pass_context
def update(ctx: click.Context, ids: tuple[str, ...], force: bool) -> None:
    """Update the installed apps that `outdated` lists (all of them, or the IDs given), each atomically.

    Prints which tools each update added, changed or removed. A descriptor edited since it was
    installed is left as it is unless --force, which keeps a copy of it. Exit 1 when one was not updated.
    """
    from aai_gateway.consent import ConsentGate
    from aai_gateway.consent.preview import server_report
    from aai_gateway.library.install import EditedFile, approval_source
    from aai_gateway.library.updates import outdated as find
    from aai_gateway.library.updates import update as update_one

    settings = settings_of(ctx)
    catalog = load_catalog(settings)
    for problem in catalog.problems:
        click.echo(f"note: {problem}", err=True)
    found = {o.app_id: o for o in find(catalog, settings.aai_home)}
    unknown = [i for i in ids if i not in found]
    for app_id in unknown:
        why = "is not installed" if not (settings.aai_home / app_id).is_dir() else "has no newer version"
        if catalog.get(app_id) is None:
            why = "is not in the library or a store"
        click.echo(f"aai-gateway: {app_id} {why}; nothing to update", err=True)
    chosen = [found[i] for i in ids if i in found] if ids else list(found.values())
    if not chosen:
        if unknown:
            raise SystemExit(1)
        click.echo("Every installed app is up to date with the library and the stores.")
        return
    failed = bool(unknown)
    for item in chosen:
        try:
            done = asyncio.run(
                update_one(
                    item, catalog, fetcher(settings), settings.aai_home, settings.max_descriptor_bytes, force=force
                )
            )
        except (AaiError, EditedFile, OSError) as exc:
            detail = exc.detail if isinstance(exc, AaiError) else str(exc)
            click.echo(f"aai-gateway: {item.app_id} was not updated: {detail}", err=True)
            failed = True
            continue
        kept = f" (your edited copy is kept in {done.done.backup})" if done.done.backup else ""
        click.echo(f"Updated {item.app_id} from {done.before} to {done.done.app.version}{kept}: {done.done.path}")
        click.echo("\n".join(done.changes.lines()))
        binding = done.done.app.mcp
        if binding is not None:  # the command line it now runs, and whether it waits for a new approval
            origin = approval_source(settings.aai_home, item.app_id)
            click.echo("\n".join(server_report(ConsentGate(settings), done.done.app, binding, origin)))
    if failed:
        fail("not every app was updated (see above)", 1)

"""`aai-gateway consent allow-server`: the user's yes to the command line of an MCP server's app."""

from __future__ import annotations

import click

from aai_gateway.cli.common import fail, settings_of
from aai_gateway.consent import ConsentGate
from aai_gateway.consent.launches import launch_line
from aai_gateway.discovery import scan


@click.command("allow-server", short_help="Approve the command line an MCP server's app starts.")
@click.argument("app")
@click.option("--yes", is_flag=True, help="Approve without the question (the command line is printed all the same).")
@click.pass_context
def allow_server(ctx: click.Context, app: str, yes: bool) -> None:
    """Show the program, arguments and environment APP's MCP server starts with, and approve that exact
    command line. A server installed from a store, a URL or the library starts only once approved; a change
    to its command line (an update) needs a new approval."""
    from aai_gateway.library.install import approval_source

    settings = settings_of(ctx)
    found = scan(settings).apps.get(app)
    if found is None or found.mcp is None:
        what = "is not installed" if found is None else "is not an MCP server (it starts no program of its own)"
        fail(f"{app} {what}; `aai-gateway --scan` lists the apps", 1)
    line = launch_line(app, found.mcp.options, found.mcp.auth)
    source = approval_source(settings.aai_home, app)
    origin = f"installed from {source}" if source else "a descriptor of your own (it needs no approval)"
    click.echo(f"{found.name} ({app}), {origin}, starts:")
    for part in line.lines():
        click.echo(f"  {part}")
    if not yes and not click.confirm("Approve this command line?", default=False):
        fail("not approved; the server is not started", 1)
    store = ConsentGate(settings).store
    try:
        approval = store.approve_server(app, line.fingerprint, line.command_line(), source="cli")
    except OSError as exc:
        fail(f"cannot write {store.path}: {exc.strerror or exc}", 1)
    click.echo(
        f"Approved (approval {approval.id}): agents can now start it. A change to its command line is asked "
        f"about again; `aai-gateway consent revoke --id {approval.id}` withdraws it."
    )

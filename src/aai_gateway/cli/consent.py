"""`aai-gateway consent`: which MCP clients may run which apps' tools. Decisions live in aai_gateway.consent."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from aai_gateway.cli.common import fail, settings_of
from aai_gateway.config import Settings
from aai_gateway.discovery import scan

if TYPE_CHECKING:
    from aai_gateway.consent import ConsentStore
    from aai_gateway.consent.store import ServerApproval


@click.group(short_help="Allow, deny, list and revoke which clients may run which tools.")
def consent() -> None:
    """Which MCP clients may run which apps' tools: list, allow, deny and revoke decisions.

    A decision names a caller (the MCP client's name; none means any caller), an app, and a tool
    (none means every tool of the app; an allow for the whole app leaves out tools marked
    destructive). Running gateways see changes on their next call.
    """


def _consent_store(ctx: click.Context) -> ConsentStore:
    from aai_gateway.consent import ConsentGate

    return ConsentGate(settings_of(ctx)).store


def _unknown_app_note(settings: Settings, app: str) -> None:
    if app.startswith(("https://", "http://")) or app in scan(settings).apps:
        return
    click.echo(f"note: no app {app!r} is installed here; the decision is kept for when it is", err=True)


@consent.command("list", short_help="List decisions, pending requests and the config's policy.")
@click.option("--json", "as_json", is_flag=True, help="Print decisions, pending requests and the policy as JSON.")
@click.pass_context
def consent_list(ctx: click.Context, as_json: bool) -> None:
    """List stored decisions, calls waiting for a decision, and the config's policy."""
    from aai_gateway.consent import command
    from aai_gateway.consent.summary import as_text

    settings = settings_of(ctx)
    store = _consent_store(ctx)
    decisions, pending = store.decisions(), store.pending()
    if as_json:
        data = {
            "decisions": [g.to_json() for g in decisions],
            "pending": [p.to_json() for p in pending],
            "servers": [a.to_json() for a in store.servers()],
            "default": settings.consent_default,
            "readOnly": settings.consent_read_only,
            "rules": [
                {k: v for k, v in (("caller", r.caller), ("app", r.app), ("tool", r.tool)) if v is not None}
                | {"decision": r.decision}
                for r in settings.consent_rules
            ],
        }
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    click.echo(f"Decisions ({len(decisions)}):")
    for grant in decisions:
        once = ", once" if grant.once else ""
        click.echo(f"  {grant.id}  {grant.decision:<5}  {grant.scope}  ({grant.created}, {grant.source}{once})")
    if not decisions:
        click.echo("  none")
    click.echo(f"\nPending requests ({len(pending)}):")
    for request in pending:
        click.echo(
            f'  {request.id}  "{request.caller}" wants {request.app}:{request.tool} '
            f"({as_text(request.arguments)}) since {request.created}"
        )
        click.echo(f"      approve: {command('allow', request.caller, request.app, request.tool)}")
    if not pending:
        click.echo("  none")
    servers = store.servers()
    click.echo(f"\nApproved MCP server command lines ({len(servers)}):")
    for approval in servers:
        click.echo(f"  {approval.id}  {approval.app}: {approval.command}  ({approval.created}, {approval.source})")
    if not servers:
        click.echo("  none")
    click.echo(
        f"\nPolicy: consent.default {settings.consent_default!r}, consent.readOnly {settings.consent_read_only!r}, "
        f"{len(settings.consent_rules)} rule(s) in config"
    )
    for index, rule in enumerate(settings.consent_rules):
        who = f'caller "{rule.caller}"' if rule.caller else "any caller"
        click.echo(f"  rules[{index}]  {rule.decision:<5}  {who}, {rule.app}:{rule.tool or '*'}")


def _store_decision(ctx: click.Context, decision: str, app: str, caller: str | None, tool: str | None) -> None:
    store = _consent_store(ctx)
    _unknown_app_note(settings_of(ctx), app)
    try:
        grant = store.store(app, decision, caller, tool)
    except OSError as exc:
        fail(f"cannot write {store.path}: {exc.strerror or exc}", 1)
    verb = "Allowed" if decision == "allow" else "Denied"
    click.echo(f"{verb}: {grant.scope} (decision {grant.id}).")
    if decision == "allow":
        for other in store.decisions():
            overlaps = (other.caller is None or caller is None or other.caller == caller) and (
                other.tool is None or tool is None or other.tool == tool
            )
            if other.decision == "deny" and other.app == app and overlaps:
                click.echo(
                    f"note: decision {other.id} denies {other.scope}, and a deny wins; "
                    f"`aai-gateway consent revoke --id {other.id}` removes it",
                    err=True,
                )


_CALLER_HELP = "The MCP client's name (its clientInfo.name, shown in CONSENT_REQUIRED); none means any caller."


@consent.command("allow", short_help="Let a caller run an app's tools without asking.")
@click.argument("app")
@click.option("--caller", help=_CALLER_HELP)
@click.option(
    "--tool", help="One tool of APP; none means every tool of APP except those marked destructive, which need --tool."
)
@click.pass_context
def consent_allow(ctx: click.Context, app: str, caller: str | None, tool: str | None) -> None:
    """Let CALLER (or any caller) run TOOL (or every tool not marked destructive) of APP without asking."""
    _store_decision(ctx, "allow", app, caller, tool)


@consent.command("deny", short_help="Refuse a caller an app's tools without asking.")
@click.argument("app")
@click.option("--caller", help=_CALLER_HELP)
@click.option("--tool", help="One tool of APP; none means every tool of APP.")
@click.pass_context
def consent_deny(ctx: click.Context, app: str, caller: str | None, tool: str | None) -> None:
    """Refuse CALLER (or any caller) running TOOL (or every tool) of APP, without asking."""
    _store_decision(ctx, "deny", app, caller, tool)


@consent.command("revoke", short_help="Remove a decision, by --id or by APP, --caller and --tool.")
@click.argument("app", required=False)
@click.option("--caller", help="The caller the decision names; none means the any-caller decision.")
@click.option("--tool", help="The tool the decision names; none means the whole-app decision.")
@click.option("--id", "grant_id", help="The decision's id, as `consent list` shows it.")
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Every decision about APP, whatever caller or tool it names, and its server's approval.",
)
@click.option("--server", is_flag=True, help="The approval of the command line APP's MCP server starts with.")
@click.pass_context
def consent_revoke(
    ctx: click.Context,
    app: str | None,
    caller: str | None,
    tool: str | None,
    grant_id: str | None,
    every: bool,
    server: bool,
) -> None:
    """Remove a decision: by --id, by the same APP, --caller and --tool it was made with, or --all of APP's;
    with --server, the approval of APP's server command line (it is then not started until approved again).

    The next call of that caller to that app is asked again (or follows the config's rules).
    """
    store = _consent_store(ctx)
    approvals: list[ServerApproval] = []
    if grant_id is not None:
        if app is not None or caller is not None or tool is not None or every:
            raise click.UsageError("give either --id or APP [--caller] [--tool] [--all], not both")
        removed = store.revoke_id(grant_id)
        approvals = store.revoke_server_id(grant_id)
    elif app is None:
        raise click.UsageError("give APP (with --caller, --tool or --all) or --id")
    elif every:
        if caller is not None or tool is not None:
            raise click.UsageError("--all removes every decision about APP; leave out --caller and --tool")
        removed = store.revoke_all(app)
        approvals = store.revoke_server(app)
    elif server:
        if caller is not None or tool is not None:
            raise click.UsageError("--server removes the approval of APP's command line; leave out --caller and --tool")
        removed, approvals = [], store.revoke_server(app)
    else:
        removed = store.revoke(app, caller, tool)
    for grant in removed:
        click.echo(f"Revoked {grant.id}: {grant.decision} {grant.scope}.")
    for approval in approvals:
        click.echo(f"Revoked {approval.id}: the approval of {approval.app}'s command line ({approval.command}).")
    if not removed and not approvals:
        fail("no stored decision matches; `aai-gateway consent list` shows them with their ids", 1)

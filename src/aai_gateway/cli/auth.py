"""`aai-gateway auth`: sign in to web apps (OAuth 2), sign out, show the status. The secret store and OAuth
live in aai_gateway.auth."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import TYPE_CHECKING

import click

from aai_gateway import logs
from aai_gateway.cli.common import fail, settings_of
from aai_gateway.config import Settings
from aai_gateway.discovery import scan
from aai_gateway.errors import AaiError
from aai_gateway.service import Gateway

if TYPE_CHECKING:
    from aai_gateway.auth.oauth import AuthStatus
    from aai_gateway.auth.provider import WebAuth


@click.group(short_help="Sign in to web apps (OAuth 2), sign out, show the status.")
def auth() -> None:
    """Sign in to web apps (OAuth 2 with PKCE), sign out, and show the sign-in status."""


def _web_auth(settings: Settings, app_id: str) -> WebAuth:
    """An installed app by id, or a web app by the site URL it was discovered at (its settings are keyed
    by that site, as the gateway keys them when it calls the app)."""
    from aai_gateway.auth.provider import web_auth

    found = scan(settings).apps.get(app_id)
    if found is None and app_id.startswith(("https://", "http://")):
        try:
            found = asyncio.run(Gateway(settings).discover(app_id))
        except AaiError as exc:
            fail(f"cannot discover {app_id}: {exc}", 1)
        web = web_auth(found)
        if web is not None:
            web = replace(web, app_id=app_id.rstrip("/"))
    elif found is None:
        fail(f"unknown app {app_id!r}: `aai-gateway apps` lists the apps found, or give a web app's site URL", 1)
    else:
        web = web_auth(found)
    if web is None:
        fail(f"app {app_id} has no web binding with a base_url and an auth section; there is nothing to sign in to", 1)
    if web.kind != "oauth2":
        fail(f"app {app_id} does not sign in with OAuth 2 (its auth type is {web.kind})", 1)
    return web


def _status_line(status: AuthStatus) -> str:
    head = f"{status.app_id}  {status.site}  "
    if not status.signed_in:
        return head + f"not signed in: run `aai-gateway auth login {status.app_id}`"
    parts = ["signed in"]
    left = status.expires_in()
    if left is None:
        parts.append("no expiry given")
    elif left > 0:
        parts.append(f"access token expires in {round(left)} s")
    else:
        parts.append(f"access token expired {round(-left)} s ago")
    parts.append("refreshable" if status.refreshable else "no refresh token")
    if status.scope:
        parts.append(f"scopes: {status.scope}")
    parts.append(f"store: {status.store}")
    return head + "; ".join(parts)


@auth.command("login", short_help="Sign in to APP in the browser; tokens go to the OS keyring.")
@click.argument("app")
@click.option("--no-browser", is_flag=True, help="Only print the sign-in URL; do not open a browser.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=300,
    show_default=True,
    help="Seconds to wait for the browser to come back.",
)
@click.pass_context
def auth_login(ctx: click.Context, app: str, no_browser: bool, timeout: float) -> None:
    """Sign in to APP in the browser (OAuth 2); the tokens go to the OS keyring.

    The sign-in URL is always printed on stderr; the browser comes back to a listener on
    127.0.0.1 (apps.<APP>.redirectPort, else a free port). Needs apps.<APP>.clientId in the config.
    """
    from aai_gateway.auth import oauth

    settings = settings_of(ctx)
    logs.configure(
        settings.log_level, settings.aai_home / "logs", stderr_level=None if ctx.obj.get("log_level") else "warning"
    )
    web = _web_auth(settings, app)

    def open_browser(url: str) -> None:
        click.echo(f"Sign in to {app} ({web.site}) with this URL:\n\n  {url}\n", err=True)
        if not no_browser:
            import webbrowser

            if not webbrowser.open(url):
                click.echo("No browser could be opened: open the URL above yourself.", err=True)
        click.echo(f"Waiting up to {timeout:g} s for the sign-in to finish...", err=True)

    try:
        tokens = asyncio.run(oauth.login(settings, app, web.site, web.auth, open_browser=open_browser, timeout=timeout))
    except AaiError as exc:
        fail(f"{exc} [{exc.code} {exc.type}]", 1)
    status = asyncio.run(oauth.status(settings, app, web.site))
    scopes = f"; scopes: {tokens.scope}" if tokens.scope else ""
    click.echo(f"Signed in to {web.site} for {app}{scopes}. Tokens stored in: {status.store}")


@auth.command("logout", short_help="Sign out of APP: delete its stored tokens.")
@click.argument("app")
@click.pass_context
def auth_logout(ctx: click.Context, app: str) -> None:
    """Sign out of APP: delete its stored tokens."""
    from aai_gateway.auth import oauth

    settings = settings_of(ctx)
    logs.configure(
        settings.log_level, settings.aai_home / "logs", stderr_level=None if ctx.obj.get("log_level") else "warning"
    )
    web = _web_auth(settings, app)
    try:
        removed = asyncio.run(oauth.logout(settings, app, web.site))
    except AaiError as exc:
        fail(f"{exc} [{exc.code} {exc.type}]", 1)
    if removed:
        click.echo(f"Signed out of {web.site} for {app}: its tokens are deleted.")
    else:
        click.echo(f"Not signed in to {web.site} for {app}; nothing to delete.")


@auth.command("status", short_help="Show the sign-in status of APP or of every OAuth 2 app.")
@click.argument("app", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
def auth_status(ctx: click.Context, app: str | None, as_json: bool) -> None:
    """Show the sign-in status of APP, or of every OAuth 2 app; never a token."""
    from aai_gateway.auth import oauth

    settings = settings_of(ctx)
    logs.configure(
        settings.log_level, settings.aai_home / "logs", stderr_level=None if ctx.obj.get("log_level") else "warning"
    )
    if app is not None:
        targets = [_web_auth(settings, app)]
    else:
        from aai_gateway.auth.provider import web_auth

        found = (web_auth(a) for a in scan(settings).apps.values())
        targets = [w for w in found if w is not None and w.kind == "oauth2"]

    async def gather() -> list[AuthStatus]:
        return [await oauth.status(settings, w.app_id, w.site) for w in targets]

    try:
        statuses = asyncio.run(gather())
    except AaiError as exc:
        fail(f"{exc} [{exc.code} {exc.type}]", 1)
    if as_json:
        click.echo(json.dumps([s.to_json() for s in statuses], ensure_ascii=False, indent=2))
        return
    for status in statuses:
        click.echo(_status_line(status))
    if not statuses:
        click.echo("No app signs in with OAuth 2.")

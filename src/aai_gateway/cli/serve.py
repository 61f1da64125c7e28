"""`aai-gateway serve`: the gateway that stays up (MCP over HTTP at /mcp and the web UI), in the foreground for
a service manager; and the code path it shares with `--web`."""

from __future__ import annotations

import gc
import logging
import sys

import click

from aai_gateway import logs
from aai_gateway.cli.common import fail, settings_of
from aai_gateway.cli.running import AlreadyRunning, Running, ServeLock, running
from aai_gateway.config import Settings
from aai_gateway.history import HistoryUnavailable
from aai_gateway.service import Gateway

log = logging.getLogger("aai_gateway.scan")

NOT_RUNNING = 3
"""The exit status of a status that finds nothing running, as `systemctl status` has it."""


def with_address(settings: Settings, host: str | None, port: int | None) -> Settings:
    """`settings` with the --host and --port given on the command line."""
    if host is not None:
        settings = settings.from_option("--host", http_host=host)
    if port is not None:
        settings = settings.from_option("--port", http_port=port)
    return settings


def started_gateway(settings: Settings) -> Gateway:
    """The gateway a server runs: its descriptors scanned (their problems logged) and its history open.

    Python's cycle collector is held off meanwhile, and what was made is then frozen (`gc.freeze`): start-up
    makes hundreds of thousands of objects that live as long as the gateway, and a collector counting
    them walks the whole heap again and again and finds no garbage (17 of 90 ms at 1,000 descriptors), as
    every full collection after would.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        gateway = Gateway(settings)
        for problem in gateway.registry.scan.problems:
            log.warning("%s", problem)
        open_history(gateway)
    finally:
        if collecting:
            gc.freeze()
            gc.enable()
    return gateway


def open_history(gateway: Gateway) -> None:
    """Create the history database and delete expired records now, not on the first call."""
    try:
        gateway.history.start()
    except HistoryUnavailable as exc:
        log.warning("calls go on; their records wait in memory until the history can be written: %s", exc)


def serve_web(settings: Settings, *, kept: bool = False) -> None:
    """Serve MCP over HTTP and the web UI until SIGINT or SIGTERM.

    `kept` is `serve`: one per AAI home (its lock file, which also says where it listens), the triggers of
    the approved saved workflows run, no login token on stderr (which a service manager keeps in its
    journal), and exit status 0 after a signal.
    """
    from aai_gateway.http_server import base_url, listening_socket, serve_http
    from aai_gateway.mcp.bearer import TokenProblem, bearer_for, requirement
    from aai_gateway.mcp.http import MCP_PATH

    try:  # before listening: a gateway that would be open to the network does not start at all
        bearer = bearer_for(settings)
    except TokenProblem as exc:
        fail(str(exc))
    lock = _one_per_home(settings) if kept else None
    logs.configure(settings.log_level, settings.aai_home / "logs")
    logs.lean()
    if lock is not None and lock.took_over is not None:
        log.warning("took over %s from pid %d, which is no longer running", lock.path, lock.took_over)
    try:
        sock = listening_socket(settings.http_host, settings.http_port)
    except OSError as exc:
        fail(f"cannot listen on {settings.http_host}:{settings.http_port}: {exc.strerror or exc}")
    gateway = started_gateway(settings)
    ui = None
    ui_url = None
    if settings.enable_web_ui:
        from aai_gateway.web import TOKEN_FILE, UI_PATH, Access

        # The token is printed once, to stderr (stdout belongs to the stdio transport elsewhere), and kept
        # in a file only the user can read, which holds a fresh one after each login.
        ui = Access(token_file=settings.aai_home / TOKEN_FILE)
        ui_url = f"{base_url(sock)}{UI_PATH}"
        if kept:
            click.echo(f"aai-gateway: web UI at {ui_url}; its login token is in {ui.token_file}", err=True)
        else:
            click.echo(f"aai-gateway: web UI at {ui_url}/login?token={ui.token}", err=True)
            click.echo(f"aai-gateway: the web UI's login token is also in {ui.token_file}", err=True)
    if bearer is not None:
        click.echo(f"aai-gateway: /mcp requires Authorization: Bearer <token>; the token is {bearer.where}", err=True)
    else:
        why = requirement(settings).why
        click.echo(f'aai-gateway: /mcp takes no token ({why}; "mcpAuth": "always" requires one)', err=True)
    if lock is None:
        serve_http(gateway, sock, ui, bearer)
        return
    lock.announce(f"{base_url(sock)}{MCP_PATH}", ui_url)
    try:
        serve_http(gateway, sock, ui, bearer, long_lived=True)
    finally:
        lock.release()
    click.echo("aai-gateway: serve stopped; its MCP servers are stopped and its history is written", err=True)


def _one_per_home(settings: Settings) -> ServeLock:
    try:
        return ServeLock.acquire(settings.aai_home)
    except AlreadyRunning as exc:
        fail(f"{exc}; stop it first (`aai-gateway serve --status` says where it listens)", 1)
    except OSError as exc:
        fail(f"cannot create the lock file in {settings.aai_home}: {exc.strerror or exc}", 1)


def describe(found: Running | None) -> str:
    if found is None:
        return "no gateway is serving (aai-gateway serve is not running)"
    if found.url is None:
        return f"aai-gateway serve (pid {found.pid}) is starting"
    ui = f"; web UI at {found.ui}" if found.ui else ""
    return f"aai-gateway serve (pid {found.pid}) is running at {found.url}{ui}"


@click.command(short_help="Serve MCP over HTTP and the web UI in the foreground, for a service manager.")
@click.option("--host", help="The address to listen on (overrides httpHost), as with --web.")
@click.option("--port", type=click.IntRange(0, 65535), help="The port (overrides httpPort; 0 picks one).")
@click.option("--status", "status", is_flag=True, help="Say whether a serve runs on this AAI home, where, its pid.")
@click.pass_context
def serve(ctx: click.Context, host: str | None, port: int | None, status: bool) -> None:
    """Serve MCP over streamable HTTP at /mcp and the web UI at /ui, as --web does, and stay up: the gateway
    that runs saved workflows when their triggers fire.

    One per AAI home: a second is refused, naming the pid of the first. Logs go to stderr and the log
    file; SIGTERM or SIGINT stops the MCP servers it started, writes the history and exits 0. Where it
    listens is kept in the AAI home's serve.lock, which --status reads (exit 0 running, 3 not running).
    `aai-gateway service install` runs it as a systemd user service.
    """
    settings = settings_of(ctx)
    if status:
        found = running(settings.aai_home)
        click.echo(describe(found))
        sys.exit(0 if found is not None else NOT_RUNNING)
    serve_web(with_address(settings, host, port), kept=True)

"""The main command and its options; subcommands that need room live beside it in this package."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from aai_gateway import __version__, logs, paths
from aai_gateway.cli.common import CLI_CALLER, fail, on_gateway, result_text, settings_of
from aai_gateway.config import Settings
from aai_gateway.descriptor import Descriptor
from aai_gateway.descriptor.validate import DEFAULT_MAX_BYTES, Loaded, check_document, load
from aai_gateway.discovery import Scan, scan
from aai_gateway.errors import AaiError
from aai_gateway.executors.script_checks import with_script_checks

if TYPE_CHECKING:
    from aai_gateway.authoring.describe import Described
    from aai_gateway.authoring.knowledge import Source

log = logging.getLogger("aai_gateway.scan")


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--mcp", "mode", flag_value="mcp", help="Serve MCP over stdio (what agents start).")
@click.option("--web", "mode", flag_value="web", help="Serve MCP over streamable HTTP at /mcp (httpHost:httpPort).")
@click.option("--scan", "mode", flag_value="scan", help="List discovered apps and every problem found.")
@click.option(
    "--discover",
    "mode",
    flag_value="discover",
    help="List apps with automation: DBus services (Linux), scriptable apps (macOS), COM servers (Windows).",
)
@click.option(
    "--generate",
    "bus_name",
    metavar="BUS_NAME|OPENAPI|SDEF|APP",
    help="Write an aai.json from a DBus service's introspection, an OpenAPI 3 file or http(s) URL, "
    "or a macOS scripting definition (an .sdef file or an .app bundle).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["a", "c"]),
    default="a",
    show_default=True,
    help="With --generate: a = multi-platform (platforms.linux), c = camelCase (execution.type dbus); sdef: a only.",
)
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="With --generate: the file to write.")
@click.option("--app-id", help="With --generate: the appId (default: from the bus name or bundle id).")
@click.option(
    "--llm",
    "use_llm",
    is_flag=True,
    help="With --generate: let the model of config.json's llm section rewrite names and descriptions (never bindings).",
)
@click.option("--json", "as_json", is_flag=True, help="With --discover: print JSON.")
@click.option(
    "--host",
    help="With --web: the address to listen on (overrides httpHost); beyond loopback, /mcp requires the token "
    "of `aai-gateway token`.",
)
@click.option("--port", type=click.IntRange(0, 65535), help="With --web: the port (overrides httpPort; 0 picks one).")
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Config file (default ~/.aai/config.json).",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    help="Overrides logLevel of the config.",
)
@click.option(
    "--platform",
    type=click.Choice(paths.PLATFORMS),
    help="Serve this platform's bindings instead of the host's (also AAI_PLATFORM).",
)
@click.version_option(__version__, prog_name="aai-gateway")
@click.pass_context
def main(
    ctx: click.Context,
    mode: str | None,
    host: str | None,
    port: int | None,
    bus_name: str | None,
    fmt: str,
    out: Path | None,
    app_id: str | None,
    use_llm: bool,
    as_json: bool,
    config: Path | None,
    log_level: str | None,
    platform: str | None,
) -> None:
    """aai-gateway: lets AI agents drive desktop and web apps through their native automation.

    Apps describe what they can do in aai.json files (~/.aai/<appId>/aai.json); agents connect with
    MCP by running `aai-gateway --mcp`.
    """
    ctx.ensure_object(dict).update(config=config, log_level=log_level, platform=platform)
    if ctx.invoked_subcommand is not None:
        return
    if bus_name is not None:
        # Generators and web auth are imported where used: `--mcp` starts without them.
        from aai_gateway.authoring import openapi, sdef

        if mode is not None:
            fail(f"--generate cannot be combined with --{mode}")
        if sdef.is_source(bus_name):
            _generate_sdef(settings_of(ctx), bus_name, fmt, out, app_id, use_llm)
        elif openapi.is_source(bus_name, Path(bus_name).is_file()):
            _generate_openapi(settings_of(ctx), bus_name, out, app_id, use_llm)
        else:
            _generate(settings_of(ctx), bus_name, fmt, out, app_id, use_llm)
    elif use_llm:
        fail("--llm goes with --generate")
    elif mode == "mcp":
        _serve_mcp(settings_of(ctx))
    elif mode == "web":
        serve_web(with_address(settings_of(ctx), host, port))
    elif mode == "scan":
        _print_scan(settings_of(ctx))
    elif mode == "discover":
        _discover(settings_of(ctx), as_json)
    else:
        click.echo(ctx.get_help())


def _serve_mcp(settings: Settings) -> None:
    logs.configure(settings.log_level, settings.aai_home / "logs")
    logs.lean()
    early = None
    remembered = None
    if sys.platform != "win32" and settings.fast_stdio:
        from aai_gateway.mcp.wire.early import Early
        from aai_gateway.mcp.wire.remembered import Remembered

        early = Early.start(settings.tool_names)  # answers initialize and tools/list before the SDK is imported
        if early is not None:
            early.answer_initialize(wait=False)
            remembered = Remembered(settings)  # the last start's listing, if nothing it depends on changed
            kept = remembered.tools
            if kept is not None:
                early.answer_initialize(wait=True)
                remembered.given = early.answer_listing(lambda: kept)
    gateway = started_gateway(settings)
    outdated = False
    if early is not None:
        from aai_gateway.mcp.wire.early import listing

        tools = listing(gateway)
        if remembered is not None:  # kept first: a client may stop the gateway as soon as it has its listing
            outdated = remembered.keep(tools)
        early.answer_initialize(wait=True)
        early.answer_listing(lambda: tools)
        early.keep_reading()  # requests sent meanwhile are timed from their arrival
    from aai_gateway.mcp.stdio import serve_stdio

    serve_stdio(gateway, early, outdated=outdated)


def _print_scan(settings: Settings) -> None:
    result = scan(settings)
    click.echo(f"Platform: {settings.platform}")
    click.echo("Scan paths: " + ", ".join(str(p) for p in settings.scan_paths))
    served = [a for a in result.apps.values() if a.served(settings.platform)]
    click.echo(f"\nApps ({len(served)}):")
    for app in served:
        click.echo("  " + _app_line(app, settings.platform))
    if not served:
        click.echo("  none: put descriptors in <scan path>/<appId>/aai.json")
    _print_problems(result)


def _app_line(app: Descriptor, platform: str) -> str:
    names = " | ".join(n.text for n in app.names)
    bindings = ", ".join(f"{b.platform} ({b.automation})" for b in app.served(platform))
    count = len(app.tools(platform))
    if app.mcp is not None:  # the server lists its tools when it runs
        return f"{app.app_id}  {names}  [{bindings}]  the server's tools"
    return f"{app.app_id}  {names}  [{bindings}]  {count} tool{'s' if count != 1 else ''}"


def _print_problems(result: Scan) -> None:
    click.echo(f"\nProblems ({len(result.problems)}):")
    for problem in result.problems:
        click.echo(f"  {problem}")
    if not result.problems:
        click.echo("  none")


def _linux_only(settings: Settings, what: str) -> None:
    if settings.platform != "linux":
        fail(
            f"{what} works with DBus on Linux only, and this platform is {settings.platform}; for a macOS app, "
            "give its .sdef file or its .app bundle",
            1,
        )


def _bus_note(settings: Settings) -> None:
    """Say which session bus a command uses when DBUS_SESSION_BUS_ADDRESS is unset and the quick start's is."""
    recorded = settings.session_bus
    if recorded is not None and recorded.usable:
        click.echo(
            f"note: DBUS_SESSION_BUS_ADDRESS is not set: using {recorded.describe()}; "
            f"`. {recorded.file}` sets it in your shell",
            err=True,
        )


def _discover(settings: Settings, as_json: bool) -> None:
    if settings.platform == "macos":
        _discover_macos(settings, as_json)
        return
    if settings.platform == "windows":
        _discover_windows(settings, as_json)
        return
    if settings.platform != "linux":
        fail(f"--discover finds apps on linux, macos and windows; this platform is {settings.platform}", 1)
    from aai_gateway.authoring import dbus_services

    _bus_note(settings)
    try:
        services = asyncio.run(dbus_services.list_services(apps=scan(settings).apps.values(), settings=settings))
    except AaiError as exc:
        fail(str(exc), 1)
    from aai_gateway.library.entries import bundled
    from aai_gateway.library.presence import entries_for, pointers

    in_library = entries_for((s.name for s in services), bundled().entries)
    if as_json:
        listed = [s.to_json() | {"library": [e.app_id for e in in_library.get(s.name, [])]} for s in services]
        click.echo(json.dumps(listed, ensure_ascii=False, indent=2))
    else:
        installed = {i for s in services for i in s.described_by}
        click.echo("\n".join([*dbus_services.report(services), *pointers(in_library, installed)]))


def _generate(settings: Settings, bus_name: str, fmt: str, out: Path | None, app_id: str | None, use_llm: bool) -> None:
    _linux_only(settings, "--generate")
    from aai_gateway.authoring import dbus_services, generate

    _bus_note(settings)
    try:
        tree = asyncio.run(dbus_services.introspect_service(bus_name, settings=settings))
        generated = generate.generate(bus_name, tree.objects, fmt=fmt, app_id=app_id)
    except (AaiError, ValueError) as exc:
        fail(str(exc), 1)
    described = _described(settings, generated.document, generated.sources, use_llm)
    _write_generated(described.document, out)
    for note in (*generated.notes, *([tree.error] if tree.error else []), *described.notes):
        click.echo(f"note: {note}", err=True)
    if tree.started is not None:
        click.echo(f"note: {tree.started.note()}", err=True)
    _said(described)
    where = f"wrote {out}" if out else "generated"
    click.echo(f"{where}: {generated.app_id}, {generated.tool_count} tools from {bus_name}", err=True)


def _discover_macos(settings: Settings, as_json: bool) -> None:
    from aai_gateway.authoring import scriptable

    folders = scriptable.roots(settings.home)
    apps, problems = scriptable.find_apps(folders, scan(settings).apps.values())
    if as_json:
        for problem in problems:
            click.echo(f"note: {problem}", err=True)
        click.echo(json.dumps([a.to_json() for a in apps], ensure_ascii=False, indent=2))
    else:
        click.echo("\n".join(scriptable.report(apps, folders, problems)))


def _discover_windows(settings: Settings, as_json: bool) -> None:
    from aai_gateway.authoring import com_servers

    try:
        servers = com_servers.find_servers(com_servers.WinRegistry(), scan(settings).apps.values())
    except AaiError as exc:
        fail(f"--discover on windows: {exc.detail}; run it on Windows", 1)
    if as_json:
        click.echo(json.dumps([s.to_json() for s in servers], ensure_ascii=False, indent=2))
    else:
        click.echo("\n".join(com_servers.report(servers)))


def _generate_sdef(
    settings: Settings, source: str, fmt: str, out: Path | None, app_id: str | None, use_llm: bool
) -> None:
    """--generate with a macOS scripting definition: an .sdef file, or an .app bundle's own."""
    from aai_gateway.authoring import scriptable, sdef

    try:
        found = scriptable.definition(Path(source))
        generated = sdef.generate(
            sdef.parse(found.data, found.source),
            source=found.source,
            bundle_id=found.bundle_id,
            app_name=found.name,
            app_id=app_id,
            fmt=fmt,
        )
    except ValueError as exc:
        fail(str(exc), 1)
    described = _described(settings, generated.document, generated.sources, use_llm)
    _write_generated(described.document, out)
    for note in (*generated.notes, *described.notes):
        click.echo(f"note: {note}", err=True)
    _said(described)
    written = f"wrote {out}" if out else "generated"
    click.echo(f"{written}: {generated.app_id}, {generated.tool_count} tools from {found.source}", err=True)


def _described(settings: Settings, document: dict[str, Any], sources: Mapping[str, Source], use_llm: bool) -> Described:
    """The generated descriptor with the library's knowledge, then (with --llm) the model's texts."""
    from aai_gateway.authoring.describe import NoModel, describe

    try:
        return asyncio.run(describe(document, sources, settings, use_llm=use_llm))
    except NoModel as exc:
        fail(str(exc), 1)


def _said(described: Described) -> None:
    for warning in described.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(described.summary(), err=True)


def _write_generated(document: dict[str, Any], out: Path | None) -> None:
    text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    errors = [p for p in check_document(document, str(out or "-")).problems if p.severity == "error"]
    if errors:
        fail("the generated descriptor is invalid (a bug):\n" + "\n".join(str(p) for p in errors), 1)
    if out is None:
        click.echo(text, nl=False)
    else:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror or exc}", 1)


def _generate_openapi(settings: Settings, source: str, out: Path | None, app_id: str | None, use_llm: bool) -> None:
    """--generate with an OpenAPI 3 document (JSON): a file, or an http(s) URL fetched like web:discover."""
    from aai_gateway.authoring import openapi

    is_url = not Path(source).is_file()
    try:
        data = asyncio.run(openapi.fetch(source, settings)) if is_url else Path(source).read_bytes()
        spec = openapi.parse(data, source)
        generated = openapi.generate(spec, source_url=source if is_url else None, app_id=app_id)
    except OSError as exc:
        fail(f"cannot read {source}: {exc.strerror or exc}", 1)
    except (AaiError, ValueError) as exc:
        fail(str(exc), 1)
    described = _described(settings, generated.document, generated.sources, use_llm)
    _write_generated(described.document, out)
    for note in (*generated.notes, *described.notes):
        click.echo(f"note: {note}", err=True)
    _said(described)
    where = f"wrote {out}" if out else "generated"
    click.echo(f"{where}: {generated.app_id}, {generated.tool_count} tools from {source}", err=True)


def _descriptor_files(path: Path) -> Iterator[Path]:
    """A file as given; a folder's own aai.json, else its <appId>/aai.json files, else its *.json files."""
    try:
        if not path.is_dir():
            yield path
            return
        own = path / "aai.json"
        if os.path.lexists(own):
            yield own
            return
        entries = sorted(path.iterdir())
    except OSError:
        yield path
        return
    nested = [p / "aai.json" for p in entries if os.path.lexists(p / "aai.json") or _unsearchable(p)]
    loose = [p for p in entries if p.suffix == ".json" and not p.is_dir()]
    yield from nested or loose or [path]


def _unsearchable(folder: Path) -> bool:
    """A folder whose aai.json cannot be looked for: `load` then reports why."""
    return folder.is_dir() and not os.access(folder, os.X_OK)


@main.command(short_help="Check descriptor files or folders; exit 1 if any is invalid.")
@click.argument("paths_", metavar="PATH...", nargs=-1, required=True, type=click.Path(path_type=Path, readable=False))
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.pass_context
def validate(ctx: click.Context, paths_: tuple[Path, ...], as_json: bool) -> None:
    """Check descriptor files (or folders of <appId>/aai.json); exit 1 if any is invalid."""
    settings = settings_of(ctx) if ctx.obj.get("config") else None
    limit = settings.max_descriptor_bytes if settings else DEFAULT_MAX_BYTES
    files = [f for p in paths_ for f in _descriptor_files(p)]
    flows = {f: read_workflow(f) for f in files if is_workflow_file(f)}  # checked as workflows, not descriptors
    results = [with_script_checks(load(f, max_bytes=limit)) for f in files if f not in flows]
    if as_json:
        found = [_loaded_json(r) for r in results] + [checked_json(f, w) for f, w in flows.items()]
        click.echo(json.dumps(found, ensure_ascii=False, indent=2))
    else:
        for file, flow in flows.items():
            click.echo(checked_text(file, flow))
        for result in results:
            if result.descriptor is not None:
                app = result.descriptor
                count = sum(len(b.tools) for b in app.bindings.values())
                tools = "the server's tools" if app.mcp is not None else f"{count} tools"
                click.echo(f"ok  {result.source}: {app.app_id} ({app.shape}, {', '.join(app.bindings)}; {tools})")
            for problem in result.problems:
                click.echo(f"{'!! ' if problem.severity == 'error' else '?  '}{problem}")
        bad = sum(1 for r in results if not r.ok) + sum(1 for w in flows.values() if isinstance(w, list))
        click.echo(f"\n{len(results) + len(flows) - bad} valid, {bad} invalid")
    sys.exit(1 if any(not r.ok for r in results) or any(isinstance(w, list) for w in flows.values()) else 0)


def _loaded_json(result: Loaded) -> dict[str, Any]:
    return {
        "file": result.source,
        "valid": result.ok,
        "appId": result.descriptor.app_id if result.descriptor else None,
        "problems": [p.as_dict() for p in result.problems],
    }


@main.command(short_help="List the apps the gateway serves on this platform.")
@click.option("--json", "as_json", is_flag=True, help="Print the apps as JSON.")
@click.pass_context
def apps(ctx: click.Context, as_json: bool) -> None:
    """List the apps the gateway serves on this platform."""
    settings = settings_of(ctx)
    served = [a for a in scan(settings).apps.values() if a.served(settings.platform)]
    if as_json:
        click.echo(json.dumps([a.to_json() for a in served], ensure_ascii=False, indent=2))
        return
    for app in served:
        click.echo(_app_line(app, settings.platform))


@main.command(short_help="Print an app's operation guide, as agents see it.")
@click.argument("app")
@click.pass_context
def guide(ctx: click.Context, app: str) -> None:
    """Print an app's operation guide, as agents see it."""
    try:  # an MCP server's app lists the server's tools
        click.echo(on_gateway(settings_of(ctx), lambda gateway: gateway.guide_live(app)), nl=False)
    except AaiError as exc:
        fail(str(exc), 1)


@main.command(short_help="Run one tool of an app and print its result.")
@click.argument("app")
@click.argument("tool")
@click.argument("args", required=False, default="{}")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON, even on a terminal (null for none).")
@click.pass_context
def call(ctx: click.Context, app: str, tool: str, args: str, as_json: bool) -> None:
    """Run one tool, e.g. `aai-gateway call org.mpris.mediaplayer2 seek '{"offset": 5000000}'`; prints the result.

    On a terminal, a call with no result says that it succeeded; piped or with --json, it prints null."""
    settings = settings_of(ctx)
    logs.configure(
        settings.log_level, settings.aai_home / "logs", stderr_level=None if ctx.obj.get("log_level") else "warning"
    )
    try:
        parsed = json.loads(args)
    except json.JSONDecodeError as exc:
        fail(f"ARGS must be a JSON object: {exc.msg} at column {exc.colno}")
    try:
        result = on_gateway(settings, lambda gateway: gateway.call(app, tool, parsed, CLI_CALLER))
    except AaiError as exc:
        fail(f"{exc} [{exc.code} {exc.type}]", 1)
    click.echo(result_text(result, app, tool, as_json=as_json))


@main.command(short_help="Print (or --rotate) the bearer token HTTP clients send to /mcp.")
@click.option(
    "--rotate", is_flag=True, help="Replace the token with a new one; running gateways use it from their next request."
)
@click.pass_context
def token(ctx: click.Context, rotate: bool) -> None:
    """Print the bearer token that clients send to /mcp (Authorization: Bearer <token>).

    The token is kept in ~/.aai/mcp-token, readable only by you, and is created on first use.
    `aai-gateway --web` requires it when listening beyond loopback, or always with "mcpAuth": "always".
    """
    from aai_gateway.mcp.bearer import TokenProblem, read_token, token_file, write_token

    settings = settings_of(ctx)
    path = token_file(settings)
    try:
        if rotate or not path.exists():
            value = write_token(path)
            done = "wrote a new token to" if rotate else "created"
            click.echo(f"aai-gateway: {done} {path} (readable only by you)", err=True)
            if rotate:
                click.echo("aai-gateway: running gateways use it from their next request; give it to clients", err=True)
        else:
            value = read_token(path)
    except TokenProblem as exc:
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}", 1)
    if settings.mcp_token is not None:
        click.echo(
            f"aai-gateway: note: config.json sets mcpToken, so gateways require the value of environment "
            f"variable {settings.mcp_token} instead of this file's token",
            err=True,
        )
    click.echo(value)


from aai_gateway.cli.approvals import allow_server  # noqa: E402 - consent's subcommand, in a module of its own
from aai_gateway.cli.auth import auth  # noqa: E402 - a command group of its own
from aai_gateway.cli.consent import consent  # noqa: E402 - a command group of its own
from aai_gateway.cli.history import history  # noqa: E402 - a command group of its own
from aai_gateway.cli.importing import import_servers  # noqa: E402
from aai_gateway.cli.library import install, library  # noqa: E402 (commands kept in their own module)
from aai_gateway.cli.serve import serve, serve_web, started_gateway, with_address  # noqa: E402
from aai_gateway.cli.service import service  # noqa: E402 - a command group of its own
from aai_gateway.cli.stats import stats  # noqa: E402 - a command group of its own
from aai_gateway.cli.updates import outdated, update  # noqa: E402
from aai_gateway.cli.workflows import checked_json, checked_text, is_workflow_file, workflow  # noqa: E402
from aai_gateway.workflows.saved import read as read_workflow  # noqa: E402

consent.add_command(allow_server)
main.add_command(auth)
main.add_command(consent)
main.add_command(history)
main.add_command(stats)
main.add_command(import_servers)
main.add_command(library)
main.add_command(install)
main.add_command(outdated)
main.add_command(update)
main.add_command(workflow)
main.add_command(serve)
main.add_command(service)

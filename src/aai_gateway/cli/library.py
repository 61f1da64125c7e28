"""`library` (list, search, publish the library and the stores) and `install` (one descriptor into the AAI home).

The library is imported when these commands run, never when the gateway serves.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from aai_gateway.cli.common import fail, settings_of
from aai_gateway.config import Settings
from aai_gateway.errors import AaiError

if TYPE_CHECKING:
    from aai_gateway.history.success import SuccessRates
    from aai_gateway.library.entries import Catalog, Entry
    from aai_gateway.library.presence import Found


def fetcher(settings: Settings) -> Any:
    """Fetches a URL under the web guards of `settings` (https, size cap, timeout, address rules)."""
    from aai_gateway.discovery.wellknown import url_fetcher

    return url_fetcher(settings)


def load_catalog(settings: Settings) -> Catalog:
    from aai_gateway.library.store import everything

    return asyncio.run(everything(settings.store_urls, fetcher(settings)))


@click.command(short_help="List and search the library of app descriptors; mark which apps are here.")
@click.argument("words", metavar="[WORD]...", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")
@click.option("--table", is_flag=True, help="Print the markdown table of bundled entries (docs/library.md).")
@click.option(
    "--publish",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Write the bundled library as a store (index.json, apps/<appId>/aai.json) and its HTML showcase into DIR.",
)
@click.option("--name", default="aai-gateway library", show_default=True, help="With --publish: the store's name.")
@click.pass_context
def library(
    ctx: click.Context, words: tuple[str, ...], as_json: bool, table: bool, publish: Path | None, name: str
) -> None:
    """List the library's entries (bundled, and those of the stores in storeUrls), or those matching WORD.

    WORD matches names in every language, aliases, tool names and descriptions, ignoring case and
    accents. Each entry says whether it is installed, and whether its app is running, on this machine
    (an activatable bus name, a command on PATH), not here, or cannot run here and why (a bus that
    cannot be reached is said once, below the list); then its verification level, category, source,
    a store's rating, and how its calls went in the last 30 days. `aai-gateway install ID` installs one.
    """
    from aai_gateway.library import entries as bundled_entries

    if table or publish is not None:
        catalog = bundled_entries.bundled()
        for problem in catalog.problems:
            click.echo(f"problem: {problem}", err=True)
        if table:
            from aai_gateway.library.table import markdown

            click.echo(markdown(catalog.entries), nl=False)
        if publish is not None:
            _publish(catalog, publish, name)
        return
    settings = settings_of(ctx)
    from aai_gateway.library.presence import bus_problems, check
    from aai_gateway.search.entries import ranked

    catalog = load_catalog(settings)
    found = ranked(catalog.entries, " ".join(words))
    present = asyncio.run(check(found, settings))
    rates = success_of(ctx)
    for problem in catalog.problems:
        click.echo(f"problem: {problem}", err=True)
    if as_json:
        rows = [_entry_json(e, present[e.app_id], settings, rates) for e in found]
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    for entry in found:
        click.echo("\n".join(_entry_lines(entry, present[entry.app_id], settings, rates)))
    if not found:
        what = f"matches {' '.join(words)!r}" if words else "is in the library"
        click.echo(f"No entry {what}.")
        return
    for bus, count in bus_problems(present[e.app_id] for e in found).items():
        click.echo(f"\n{count} entr{'ies' if count != 1 else 'y'} cannot run here: {bus}")
    click.echo(f"\n{len(found)} entr{'ies' if len(found) != 1 else 'y'}. Install one with: aai-gateway install ID")


def _installed(entry: Entry, settings: Settings) -> bool:
    return (settings.aai_home / entry.app_id / "aai.json").exists()


def success_of(ctx: click.Context) -> SuccessRates | None:
    """How the apps' calls went in the last 30 days, or None (said on stderr) when the history cannot be read."""
    from aai_gateway.cli.common import history_store
    from aai_gateway.history import HistoryUnavailable
    from aai_gateway.history.record import now
    from aai_gateway.history.success import success_rates

    try:
        return success_rates(history_store(ctx), now())
    except HistoryUnavailable as exc:
        click.echo(f"note: the call history cannot be read, so no success rates are shown: {exc}", err=True)
        return None


def _entry_json(entry: Entry, found: Found, settings: Settings, rates: SuccessRates | None) -> dict[str, Any]:
    ran = rates.app(entry.app_id) if rates else None
    tools = {t: rates.tool(entry.app_id, t) for t in entry.tools} if rates else {}
    return entry.to_json() | {
        "present": found.state,
        "presentWhy": found.why,
        "running": found.running,
        "busProblem": found.problem or None,
        "installed": _installed(entry, settings),
        "sourceName": entry.source_text,
        "success": ran.to_json() if ran else None,
        "toolSuccess": {t: s.to_json() for t, s in tools.items() if s},
    }


def _entry_lines(entry: Entry, found: Found, settings: Settings, rates: SuccessRates | None) -> list[str]:
    level = entry.verified.level if entry.verified else "unverified"
    installed = "installed" if _installed(entry, settings) else "not installed"
    others = [n.text for n in entry.names if n.text != entry.name]
    also = f" ({', '.join(others)})" if others else ""
    lines = [
        f"{entry.app_id}  {entry.name}{also}",
        f"    {installed}; {found.text()}",
        f"    verified: {level}; {entry.category}; source: {entry.source_text}; version {entry.version}",
    ]
    extra = []
    if entry.rating is not None:
        extra.append(entry.rating.text())
    if entry.reviews_url:
        extra.append(f"reviews: {entry.reviews_url}")
    ran = rates.app(entry.app_id) if rates else None
    if ran is not None:
        tools = [(t, rates.tool(entry.app_id, t)) for t in entry.tools] if rates else []
        each = ", ".join(f"{t} {s.ok} of {s.calls}" for t, s in tools if s)
        extra.append(f"{ran.text()}" + (f" ({each})" if each else ""))
    if extra:
        lines.append(f"    {'; '.join(extra)}")
    lines.append(f"    {entry.description}")
    return lines


def _publish(catalog: Catalog, folder: Path, name: str) -> None:
    from aai_gateway.library import showcase
    from aai_gateway.library.store import publish

    try:
        index = publish(catalog.entries, folder, name)
        pages = showcase.write(catalog.entries, folder, name)
    except OSError as exc:
        fail(f"cannot write the store into {folder}: {exc.strerror or exc}", 1)
    click.echo(
        f"wrote {index}, {len(catalog.entries)} descriptors and a showcase of {len(pages)} pages "
        f"({folder / 'index.html'}); serve {folder} over https and add the index's URL to storeUrls",
        err=True,
    )


@click.command(short_help="Install a descriptor (library id, file or https URL) into ~/.aai/<appId>/aai.json.")
@click.argument("what", metavar="ID|FILE|URL")
@click.option("--force", is_flag=True, help="Replace a descriptor that was edited (a copy is kept beside it).")
@click.pass_context
def install(ctx: click.Context, what: str, force: bool) -> None:
    """Check a descriptor and write it as ~/.aai/<appId>/aai.json (the AAI home), where the gateway finds it.

    ID is a library entry (`aai-gateway library` lists them; entries of storeUrls are fetched and their
    SHA-256 checked); FILE is an aai.json; URL is an https URL, fetched under the web.* rules. A file
    changed since it was installed is not replaced without --force. Prints the tools an agent can now
    use and what consent will ask.
    """
    from aai_gateway.consent import ConsentGate
    from aai_gateway.consent.preview import report
    from aai_gateway.library.entries import Catalog
    from aai_gateway.library.install import EditedFile, approval_source, looks_like_file, looks_like_url, obtain
    from aai_gateway.library.install import install as write

    settings = settings_of(ctx)
    plain = looks_like_url(what) or looks_like_file(what)
    catalog = Catalog(()) if plain else load_catalog(settings)
    for problem in catalog.problems:
        click.echo(f"note: {problem}", err=True)
    try:
        data, source = asyncio.run(obtain(what, catalog, fetcher(settings), settings.max_descriptor_bytes))
        done = write(data, source, settings.aai_home, force=force)
    except AaiError as exc:
        fail(exc.detail, 1)
    except EditedFile as exc:
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"cannot install {what}: {exc.strerror or exc}", 1)
    for warning in done.warnings:
        click.echo(f"warning: {warning}", err=True)
    app = done.app
    said = {
        "installed": f"Installed {app.name} ({app.app_id} {app.version or ''}) from {source}",
        "updated": f"Updated {app.name} ({app.app_id}) to version {app.version or '?'} from {source}",
        "unchanged": f"{app.name} ({app.app_id}) is already installed with this content",
        "replaced": f"Replaced the edited {app.app_id} with the one from {source} (the old one is in {done.backup})",
    }[done.outcome]
    click.echo(f"{said.replace(' )', ')')}: {done.path}")
    if settings.aai_home not in settings.scan_paths:
        shown = ", ".join(str(p) for p in settings.scan_paths)
        click.echo(f"note: scanPaths ({shown}) does not hold {settings.aai_home}; add it so the gateway sees the app")
    elif done.outcome != "unchanged":
        click.echo("A running gateway picks it up by itself; agents see it on their next tools/list.")
    origin = approval_source(settings.aai_home, app.app_id)
    click.echo("\n".join(report(ConsentGate(settings), app, settings.platform, origin=origin)))

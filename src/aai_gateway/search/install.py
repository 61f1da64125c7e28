"""An agent's install of a library or store entry (`aai_install`), always with the user's yes.

The entry is fetched and checked first (a store's against the SHA-256 its index gives); then the user is
asked one question showing what they would install: the app, its verification, its tools with their
annotations (destructive ones named), where it comes from, and for an MCP server the program, arguments
and environment it would run. A yes installs it and, for an MCP server, approves that exact command line
(the user saw it). `consent.install` may let bundled entries that run no program in unasked, or refuse
agents' installs; `consent.default` never approves one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aai_gateway.config import Settings
from aai_gateway.consent import Answer, Ask, ConsentGate, Question
from aai_gateway.consent.launches import LaunchLine, launch_line
from aai_gateway.consent.summary import safe
from aai_gateway.descriptor import Descriptor
from aai_gateway.discovery import wellknown
from aai_gateway.errors import AppNotFound, ConsentRequired, PermissionDenied
from aai_gateway.library.entries import Catalog, Entry
from aai_gateway.library.install import check, install, obtain
from aai_gateway.library.search import near

INSTALL = "(install it)"
"""The "tool" an install question names."""
CHOICES: tuple[tuple[Answer, str], ...] = ((Answer.APP, "Install it"), (Answer.DENY, "Do not install it"))
MOST_TOOLS_SHOWN = 25


@dataclass(frozen=True, slots=True)
class Offer:
    """What an install would write, checked, and how to say it."""

    entry: Entry
    data: bytes
    source: str
    app: Descriptor
    launch: LaunchLine | None
    """The program it would run, for an MCP server."""

    def question(self, caller: str) -> Question:
        entry, app = self.entry, self.app
        origin = "the gateway's bundled library" if entry.bundled else f"the store {entry.source}"
        lines = [
            f'"{safe(caller)}" wants to install {safe(app.name)} ({safe(app.app_id)}) {safe(entry.version)} '
            f"from {safe(origin, 300)}.",
        ]
        if not entry.bundled and entry.sha256:
            lines.append(f"Its descriptor's SHA-256 is {entry.sha256}, as the store's index lists it.")
        if entry.verified is not None:
            how = f": {safe(entry.verified.against, 200)}" if entry.verified.against else ""
            lines.append(f"Verified: {entry.verified.level}{how}.")
        else:
            lines.append("Verified: not said by its source.")
        tools = [tool for binding in app.bindings.values() for tool in binding.tools]
        if tools:
            lines.append(f"Its tools ({len(tools)}):")
            for tool in tools[:MOST_TOOLS_SHOWN]:
                marks = [m for m, on in (("destructive", tool.destructive), ("read-only", tool.read_only)) if on]
                lines.append(f"  {safe(tool.name)}" + (f" [{', '.join(marks)}]" if marks else ""))
            if len(tools) > MOST_TOOLS_SHOWN:
                lines.append(f"  … and {len(tools) - MOST_TOOLS_SHOWN} more")
        destructive = [t.name for t in tools if t.destructive]
        if destructive:
            lines.append(f"Destructive (may delete or overwrite data): {safe(', '.join(destructive), 300)}.")
        if self.launch is not None:
            lines.append("It is an MCP server: installing it approves running this on your machine:")
            lines.extend(f"  {part}" for part in self.launch.lines())
        return Question(caller, app.app_id, app.name, INSTALL, "", (), text="\n".join(lines), choices=CHOICES)


async def offer(settings: Settings, catalog: Catalog, app_id: str) -> Offer:
    """The entry `app_id` of the library or a store, fetched and checked; AppNotFound names close ids."""
    entry = catalog.get(app_id)
    if entry is None:
        close = near(catalog.entries, app_id)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise AppNotFound(f"neither the library nor a store has {app_id!r}{hint}; search finds their entries")
    data, source = await obtain(app_id, catalog, wellknown.url_fetcher(settings), settings.max_descriptor_bytes)
    app, _ = check(data, source)
    mcp = app.mcp
    launch = launch_line(app.app_id, mcp.options, mcp.auth) if mcp is not None else None
    return Offer(entry, data, source, app, launch)


async def agree(settings: Settings, found: Offer, caller: str, ask: Ask | None, ui_url: str | None) -> None:
    """Return when the user agreed to `found`'s install (or `consent.install` lets it in); raise otherwise."""
    policy = settings.consent_install
    how = f"the user can run `aai-gateway install {found.app.app_id}`" + (
        f" or install it on {ui_url}/library" if ui_url else " or install it on the web UI's Library page"
    )
    if policy == "deny":
        raise PermissionDenied(f'agents may not install apps here (consent.install is "deny"); {how}')
    if policy == "library" and found.entry.bundled and found.launch is None:
        return
    if found.launch is not None and not found.launch.fits():
        raise ConsentRequired(f"{found.app.app_id} runs a command line too long to show in a question; {how}")
    answer = await ask(found.question(caller)) if ask is not None else None
    if answer is None:
        raise ConsentRequired(f"installing {found.app.app_id} needs the user's yes, and it could not be asked; {how}")
    if not answer.allows:
        raise PermissionDenied(f"the user declined installing {found.app.app_id}; nothing was installed")


def write(found: Offer, aai_home: Path, consent: ConsentGate) -> None:
    """Install what the user agreed to; an MCP server's command line, which the question showed, is approved."""
    install(found.data, found.source, aai_home)
    if found.launch is not None:
        consent.store.approve_server(
            found.app.app_id, found.launch.fingerprint, found.launch.command_line(), source="install"
        )

"""What consent will do when an agent first runs each tool of an app: the verdicts, before any call."""

from __future__ import annotations

from dataclasses import dataclass

from aai_gateway.consent.gate import ConsentGate
from aai_gateway.consent.launches import approve_command, launch_line
from aai_gateway.consent.policy import Mode
from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.descriptor.parameters import signature_text

ANY_CALLER = "*"
"""Stands for a client with no decision or rule of its own; rules naming a caller do not apply to it."""


@dataclass(frozen=True, slots=True)
class Preview:
    tool: Tool
    mode: Mode
    why: str


def preview(gate: ConsentGate, app: Descriptor, platform: str) -> list[Preview]:
    """For each tool the gateway serves on `platform`: allow, ask or deny, and what decides it."""
    found = []
    for _, tool in app.tools(platform):
        verdict = gate.verdict(
            ANY_CALLER, app.app_id, tool.name, read_only=tool.read_only, destructive=tool.destructive
        )
        found.append(Preview(tool, verdict.mode, verdict.why))
    return found


def marks(tool: Tool) -> str:
    """The tool's marks in words: "read-only", "destructive", or ""."""
    given = [word for word, on in (("read-only", tool.read_only), ("destructive", tool.destructive)) if on]
    return ", ".join(given)


HEADINGS: dict[Mode, str] = {
    "allow": "run without asking",
    "ask": "ask the user first",
    "deny": "are refused",
}


def report(gate: ConsentGate, app: Descriptor, platform: str, *, origin: str | None = None) -> list[str]:
    """Lines saying what an agent can now do with `app` and what consent will ask, for people to read.

    `origin`: where `app` was installed from, when that calls for the user's yes to the program it runs."""
    if app.mcp is not None:
        return server_report(gate, app, app.mcp, origin)
    previews = preview(gate, app, platform)
    if not previews:
        served = ", ".join(app.bindings)
        return [f"{app.name} has no tools on {platform} (it binds {served}); agents on this machine will not see it."]
    lines = [f"An agent can now use {app.name} ({len(previews)} tool{'s' if len(previews) != 1 else ''}):"]
    for item in previews:
        mark = marks(item.tool)
        first = item.tool.description.strip().split("\n", 1)[0]
        lines.append(f"  {item.tool.name}{f' [{mark}]' if mark else ''}: {first}")
        lines.append(f"    parameters: {signature_text(item.tool.parameters)}")
    lines.append("Consent, for a client without a decision of its own:")
    for mode, heading in HEADINGS.items():
        chosen = [p for p in previews if p.mode == mode]
        if chosen:
            reasons = "; ".join(dict.fromkeys(p.why for p in chosen))
            lines.append(f"  {len(chosen)} {heading} ({reasons}): {', '.join(p.tool.name for p in chosen)}")
    if any(p.tool.destructive for p in previews):
        lines.append(
            "  Tools marked destructive are asked about one by one: allowing every tool of the app does not cover them."
        )
    return lines


def server_report(gate: ConsentGate, app: Descriptor, binding: Binding, origin: str | None) -> list[str]:
    """What an MCP server's app runs on this machine, and when agents can use it."""
    line = launch_line(app.app_id, binding.options, binding.auth)
    runs = "runs this program on this machine" if line.program else "reaches this server"
    lines = [f"{app.name} is an MCP server; the gateway {runs}:", *(f"  {part}" for part in line.lines())]
    tools = "its tools are the server's own, listed once it starts"
    if origin is not None and not gate.store.server_approved(app.app_id, line.fingerprint):
        lines.append(
            f"Agents see {app.app_id} among the apps now, but it does not start until you approve this command "
            f"line: `{approve_command(app.app_id)}`, or answer the question an agent's client puts when it first "
            f"needs the server; {tools}."
        )
    else:
        lines.append(
            f"Agents see {app.app_id} now, and it starts when one first asks for its guide or calls it; {tools}."
        )
    verdict = gate.verdict(ANY_CALLER, app.app_id, "")
    lines.append(
        f"Consent for its tools, for a client without a decision of its own: {HEADINGS[verdict.mode]} ({verdict.why})."
    )
    return lines

"""What consent will do when an agent first runs each tool of an app: the verdicts, before any call."""

from __future__ import annotations

from dataclasses import dataclass

from aai_gateway.consent.gate import ConsentGate
from aai_gateway.consent.policy import Mode
from aai_gateway.descriptor import Descriptor, Tool
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


def report(gate: ConsentGate, app: Descriptor, platform: str) -> list[str]:
    """Lines saying what an agent can now do with `app` and what consent will ask, for people to read."""
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

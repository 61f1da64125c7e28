"""What agents read: the one-line catalogue entry and the markdown operation guide of seed 004, with the app's
names, platforms and authentication, and for each operation its parameter list (from `parameters`) and an
`aai_exec({...})` example whose arguments come from `examples`, written the way seed 004 writes them, with
the exec tool named as the gateway lists it.
"""

from __future__ import annotations

import json
from typing import Any

from aai_gateway.descriptor.examples import example_args
from aai_gateway.descriptor.model import Annotations, Binding, Descriptor, Event, Tool
from aai_gateway.descriptor.parameters import parameter_lines
from aai_gateway.descriptor.server_events import MESSAGE, NOTIFICATIONS, UPDATED

AUTH_TEXT = {
    "macos": "Uses OS-level consent (TCC). First execution shows native dialog.",
    "windows": "Uses the app's COM automation; some apps ask the user to allow access on first use.",
    "linux": "Uses the desktop session's DBus; no sign-in is needed.",
    "android": "Uses Android intents.",
    "ios": "Uses iOS URL schemes.",
    "mcp": "An MCP server the gateway reaches with the credentials the user configured; no sign-in is asked of you.",
}


def catalogue_entry(app: Descriptor) -> str:
    """`【{names}】{description}. Aliases: {aliases}. Call to get guide.` (seed 004)."""
    names = "|".join(n.text for n in app.names)
    text = f"【{names}】{app.description.rstrip().rstrip('.')}."
    if app.aliases:
        text += f" Aliases: {', '.join(app.aliases)}."
    return text + " Call to get guide."


def guide(
    app: Descriptor, platform: str, *, site: str | None = None, exec_name: str = "aai_exec", wait_name: str = "aai_wait"
) -> str:
    """The markdown operation guide for the tools `platform` serves; `exec_name` is the exec tool as listed.

    `site` is the origin a web app was discovered at: the guide shows it, and its examples name the app
    by it (seed 004: `aai:exec({app: "https://api.notion.com", ...})`).
    """
    served = app.served(platform)
    lines = [
        f"# {app.name} Operation Guide",
        "",
        "## App Info",
        "",
        f"- ID: {app.app_id}",
        f"- Platform: {', '.join(b.platform for b in served) or 'none for ' + platform}",
    ]
    if site:
        lines.append(f"- Site: {site}")
    if len(app.names) > 1:
        lines.append(f"- Names: {' | '.join(_name(n.text, n.lang) for n in app.names)}")
    if app.aliases:
        lines.append(f"- Aliases: {', '.join(app.aliases)}")
    if app.description:
        lines.append(f"- Description: {one_line(app.description)}")
    lines += ["", "## Authentication", ""]
    lines += [_auth_text(b) for b in served] or ["None."]
    lines += ["", "## Retries", ""]
    lines += [_retry_text(b) for b in served] or ["None."]
    lines += ["", LIMITS]
    lines += ["", "## Available Operations", ""]
    for binding, tool in app.tools(platform):
        lines += _operation(site or app.app_id, binding, tool, exec_name)
    if app.events:
        lines += ["## Events", "", f"Wait for one with {wait_name} {{app, event, filter?, timeout}}.", ""]
        for event in app.events:
            lines += _event(site or app.app_id, event, wait_name)
    lines += ["---", "", f"Use {exec_name} tool to execute operations."]
    return "\n".join(lines) + "\n"


_ACTIVATED = (
    "An app that is not running but can be started (DBus activation) is started and the call tried once more; "
    "a call that timed out is never repeated."
)
_HTTP = (
    "HTTP 429 and 503 answers with Retry-After are retried for GET, HEAD, PUT and DELETE while the timeout "
    "allows; other methods and timed-out calls are never repeated."
)
_MACOS = "macOS starts the app when a call addresses it; a call is never repeated."
NEVER = "A call is never repeated."
_MCP = (
    "The gateway starts the MCP server on first use and again after it ended; a call is never repeated, and "
    "the server's own answer (text, images, resources, isError) comes back as the server sent it."
)
LIMITS = (
    "Timeouts and limits: each call ends with TIMEOUT after the user's timeout for this app, else the "
    "operation's own, else the user's default (30 s unless set). At most a few calls to one app run at once "
    "(the user's maxCallsPerApp, 16 unless set); more wait their turn, and calls to other apps are not held up."
)
RETRY_TEXT = {
    "dbus": _ACTIVATED,
    "ipc": _ACTIVATED,
    "http": _HTTP,
    "restapi": _HTTP,
    "applescript": _MACOS,
    "jxa": _MACOS,
    "apple-events": _MACOS,
    "mcp": _MCP,
}
"""What the gateway retries for each automation type (SPEC §5: only where it is safe)."""


def _retry_text(binding: Binding) -> str:
    return f"{binding.platform}: {RETRY_TEXT.get(binding.automation, NEVER)}"


def _name(text: str, lang: str | None) -> str:
    return f"{text} ({lang})" if lang else text


def _auth_text(binding: Binding) -> str:
    if binding.platform != "web" and not (binding.automation == "mcp" and binding.auth):
        return AUTH_TEXT.get(binding.platform, "Uses the platform's own authorization.")
    kind = (binding.auth or {}).get("type", "none")
    return {
        "oauth2": "OAuth 2 sign-in; run `aai-gateway auth login <app>` once if a call asks for it.",
        "api_key": "An API key, configured for the gateway by the user.",
        "bearer": "A bearer token, configured for the gateway by the user.",
    }.get(kind, "No authentication.")


def _operation(app_ref: str, binding: Binding, tool: Tool, exec_name: str) -> list[str]:
    lines = [f"### {tool.name}", ""]
    if tool.description:
        lines += [one_line(tool.description), ""]
    if hints := hint_words(tool.annotations):
        lines += [f"**Hints**: {', '.join(hints)}", ""]
    if tool.undo is not None:
        lines += [f"**Undo**: a plan that fails after this step undoes it with `{tool.undo.tool}`.", ""]
    lines += ["**Parameters**:", ""]
    lines += parameter_lines(tool.parameters) or ["- none"]
    lines += [
        "",
        "**Example**:",
        f"{exec_name}({{",
        f"app: {json.dumps(app_ref, ensure_ascii=False)},",
        f'tool: "{tool.name}",',
        f"args: {_js(example_args(tool.parameters))}",
        "})",
        "",
    ]
    return lines


def _event(app_ref: str, event: Event, wait_name: str) -> list[str]:
    lines = [f"### {event.name}", "", one_line(event.description), ""]
    filter = ""
    if event.kind == "poll":
        what = f"the result of `{event.source.get('tool')}`, polled every {event.source.get('every')} s"
    elif event.kind == "mcp":
        what, filter = notification_payload(event)
    else:
        fields = event.source.get("fields")
        named = ", ".join(str(f) for f in fields) if isinstance(fields, list) else ""
        what = f"the signal's arguments {{{named}}}" if named else 'the signal\'s arguments as {"args": [...]}'
    lines += [f"**Payload**: {what}" + (" (reshaped by the descriptor)" if event.payload is not None else "") + ".", ""]
    example = f'{wait_name}({{app: "{app_ref}", event: "{event.name}", {filter}timeout: 60}})'
    return [*lines, "**Example**:", "```", example, "```", ""]


def notification_payload(event: Event) -> tuple[str, str]:
    """What an MCP notification's payload holds, and the filter its example needs (a resource update whose
    resource the event does not name needs one naming it)."""
    method = str(event.source.get("notification"))
    what = f"`{method}`: {NOTIFICATIONS.get(method, 'its params')}"
    if method == MESSAGE and event.source.get("level"):
        what += f"; only level {event.source['level']} and more severe"
    if method != UPDATED:
        return what, ""
    if event.source.get("uri"):
        return f"{what}; the gateway subscribes to {event.source['uri']} while somebody waits", ""
    what += "; name the resource in the filter (uri == '...'), and the gateway subscribes to it while you wait"
    return what, "filter: \"uri == 'file:///path/of/the/resource'\", "


def one_line(text: str) -> str:
    """`text` on one line: an MCP server's description cannot start a heading or a list of its own in the guide."""
    return " ".join(text.split())


def hint_words(annotations: Annotations) -> list[str]:
    """The annotations that are true of a tool, in words: `["read-only", "open-world"]`."""
    given = (
        ("read-only", annotations.read_only),
        ("destructive", annotations.destructive),
        ("idempotent", annotations.idempotent),
        ("open-world", annotations.open_world),
    )
    return [word for word, value in given if value is True]


def _js(value: Any) -> str:
    """Render args the way seed 004 writes them: `{ title: "Submit report" }`."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = ", ".join(f"{_key(k)}: {_js(v)}" for k, v in value.items())
        return "{ " + inner + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_js(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _key(key: str) -> str:
    return key if key.isidentifier() else json.dumps(key, ensure_ascii=False)

"""What an MCP server's app starts (its command line), and the user's yes before a store's or URL's one starts.

A command line is known by a SHA-256 fingerprint of its launch as written: program, arguments, folder,
environment names with their values or their `{"$env": …}` / `{"$keyring": …}` references (never a
secret's value: the references are hashed, not what they resolve to), and for an HTTP server its URL
and header names. An approval is kept per app for one fingerprint, so an update that changes the
command line is asked about again.

Which apps need an approval is the caller's to say (`origin`): one installed from a store, a URL or
the library does; a descriptor the user wrote or imported does not.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from aai_gateway.consent.gate import Ask, Question
from aai_gateway.consent.policy import Answer
from aai_gateway.consent.store import ConsentStore
from aai_gateway.consent.summary import REDACTED, SECRET_KEY, safe
from aai_gateway.descriptor import Binding, Descriptor
from aai_gateway.errors import ConsentRequired, PermissionDenied

LAUNCH_KEYS = ("command", "args", "cwd", "env", "url", "headers")
MAX_SHOWN = 2000
"""Characters of a command line a question may show; a longer one is approved with the CLI, which shows it whole."""
START = "(start its server)"
"""The "tool" a question about starting a server names (a batch asks once per app and tool)."""
CHOICES: tuple[tuple[Answer, str], ...] = (
    (Answer.APP, "Approve this command line and start it"),
    (Answer.DENY, "Do not start it"),
)


T = TypeVar("T")
ASKER: ContextVar[tuple[str, Ask | None]] = ContextVar("asker", default=("unknown", None))
"""Who the request under way serves and how to ask its user: the caller's name and its `Ask`, if any."""


async def asked_by(caller: str, ask: Ask | None, running: Awaitable[T]) -> T:
    """`running`, awaited as the request of `caller`: a server it needs is asked about with `ask`."""
    token = ASKER.set((caller, ask))
    try:
        return await running
    finally:
        ASKER.reset(token)


@dataclass(frozen=True, slots=True)
class LaunchLine:
    """An MCP server's launch as a person reads it (secrets masked) and its fingerprint."""

    app: str
    program: str | None
    args: tuple[str, ...]
    cwd: str | None
    env: tuple[tuple[str, str], ...]
    """(name, shown value): a literal value, `$env:NAME`, `$keyring:KEY`, or [redacted] for a secret-looking name"""
    url: str | None
    headers: tuple[str, ...]
    fingerprint: str

    def command_line(self) -> str:
        """The program and its arguments, quoted for a shell, control characters escaped."""
        if self.program is None:
            return f"streamable HTTP {self.url}"
        return " ".join(_quoted(part) for part in (self.program, *self.args))

    def lines(self) -> list[str]:
        """One line per part: program, arguments, folder, environment (or URL and header names)."""
        if self.program is None:
            shown = [f"URL: {_escaped(self.url or '')}"]
            if self.headers:
                shown.append(f"headers: {', '.join(_escaped(h) for h in self.headers)} (values not shown)")
            return shown
        shown = [f"program: {_quoted(self.program)}"]
        shown.append(f"arguments: {' '.join(_quoted(a) for a in self.args)}" if self.args else "arguments: none")
        if self.cwd:
            shown.append(f"folder: {_quoted(self.cwd)}")
        shown.append(f"environment: {self.environment() or 'nothing added'}")
        return shown

    def environment(self) -> str:
        """The variables added, `NAME=value` (secret-looking values masked, references as written)."""
        return ", ".join(f"{_escaped(name)}={_escaped(value)}" for name, value in self.env)

    def fits(self) -> bool:
        """Whether the whole launch fits in a question (a longer one must not be shown cut)."""
        return sum(len(line) for line in self.lines()) <= MAX_SHOWN


def fingerprint(options: Mapping[str, Any], auth: Mapping[str, Any] | None = None) -> str:
    """The SHA-256 of an mcp binding's launch as written (its execution block without `type`) and its `auth`:
    a header or auth that names another secret sends that one, so it is part of what is approved."""
    launch: dict[str, Any] = {key: options.get(key) for key in LAUNCH_KEYS}
    launch["auth"] = auth
    text = json.dumps(launch, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def launch_line(app_id: str, options: Mapping[str, Any], auth: Mapping[str, Any] | None = None) -> LaunchLine:
    command, url = options.get("command"), options.get("url")
    env, headers = _mapping(options.get("env")), _mapping(options.get("headers"))
    cwd = options.get("cwd")
    return LaunchLine(
        app=app_id,
        program=str(command) if command is not None else None,
        args=_masked_args([_written(a) for a in options.get("args") or ()]),
        cwd=str(cwd) if cwd else None,
        env=tuple((str(name), _env_value(str(name), value)) for name, value in env.items()),
        url=_written(url) if url is not None and command is None else None,
        headers=tuple(str(name) for name in headers),
        fingerprint=fingerprint(options, auth),
    )


def approve_command(app_id: str) -> str:
    return f"aai-gateway consent allow-server {shlex.quote(app_id)}"


Origin = Callable[[str], str | None]
"""Where an app's descriptor came from when that calls for the user's approval (a store's URL, a URL, the
library), else None (the user wrote or imported it)."""


class LaunchGate:
    """Lets an MCP server start only once its command line is approved, where its origin calls for that."""

    def __init__(self, store: ConsentStore, origin: Origin, ui_url: Callable[[], str | None]) -> None:
        self.store = store
        self.origin = origin
        self.ui_url = ui_url

    def waiting(
        self, app_id: str, options: Mapping[str, Any], auth: Mapping[str, Any] | None = None
    ) -> tuple[LaunchLine, str] | None:
        """The launch of an mcp binding's `options` (and `auth`) and where its app came from, when it must be
        approved and is not; else None."""
        line = launch_line(app_id, options, auth)
        if self.store.server_approved(app_id, line.fingerprint):
            return None
        source = self.origin(app_id)
        return None if source is None else (line, source)

    async def require(self, app: Descriptor, binding: Binding) -> None:
        """Return when the server of `app`'s `binding` may start (or be used); ask the user of the request
        under way (`asked_by`) when it can, else raise ConsentRequired."""
        caller, ask = ASKER.get()
        found = self.waiting(app.app_id, binding.options, binding.auth)
        if found is None:
            return
        line, source = found
        answer = None
        if ask is not None and line.fits():
            answer = await ask(question(caller, app, line, source))
        if answer is None:
            raise ConsentRequired(self._how_to_approve(app, line, caller, source, asked=ask is not None))
        if not answer.allows:
            raise PermissionDenied(
                f"the user refused starting the MCP server of {app.app_id} ({safe(line.command_line(), 200)}); "
                f"`{approve_command(app.app_id)}` approves it later"
            )
        self.store.approve_server(app.app_id, line.fingerprint, line.command_line(), source="asked")

    def _how_to_approve(self, app: Descriptor, line: LaunchLine, caller: str, source: str, *, asked: bool) -> str:
        if asked and not line.fits():
            why = "its command line is too long to show in a question"
        elif asked:
            why = "the user gave no answer"
        else:
            why = "this client cannot ask the user (no MCP elicitation)"
        ui = self.ui_url()
        where = f", or approve it on {ui}" if ui else ""
        program = safe(line.program or line.url or "", 120)
        who = "Review and approve it" if caller == "cli" else "Ask the user to review and approve it"
        return (
            f"{app.app_id} is an MCP server from {safe(source, 200)} that starts {program}; its command line is "
            f"not approved yet, and {why}. {who} with `{approve_command(app.app_id)}`{where}, then call again."
        )


def question(caller: str, app: Descriptor, line: LaunchLine, source: str) -> Question:
    runs = "Starting it runs this program on your machine" if line.program else "It reaches"
    text = "\n".join(
        [
            f'"{safe(caller)}" wants to use {safe(app.name)} ({safe(app.app_id)}), an MCP server from '
            f"{safe(source, 200)}. {runs}:",
            *(f"  {part}" for part in line.lines()),
            "Approve it only if you trust this command line; a change to it is asked about again.",
        ]
    )
    return Question(caller, app.app_id, app.name, START, "", (), text=text, choices=CHOICES)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _masked_args(args: list[str]) -> tuple[str, ...]:
    """The arguments, with the value after a secret-looking flag (`--token X`, `--api-key=X`) masked."""
    shown: list[str] = []
    hide_next = False
    for arg in args:
        if hide_next:
            shown.append(REDACTED)
            hide_next = False
            continue
        flag, equals, _ = arg.partition("=")
        if flag.startswith("-") and SECRET_KEY.search(flag):
            if equals:
                shown.append(f"{flag}={REDACTED}")
                continue
            hide_next = True
        shown.append(arg)
    return tuple(shown)


def _written(value: Any) -> str:
    """A value as the descriptor writes it: a reference as `$env:NAME` or `$keyring:KEY`, else the text."""
    if isinstance(value, Mapping):
        for kind in ("$env", "$keyring"):
            if kind in value:
                return f"{kind}:{value[kind]}"
    return str(value)


def _env_value(name: str, value: Any) -> str:
    if not isinstance(value, Mapping) and SECRET_KEY.search(name):
        return REDACTED
    return _written(value)


def _escaped(text: str) -> str:
    return safe(text, len(text) + 1)


def _quoted(text: str) -> str:
    return _escaped(shlex.quote(text))

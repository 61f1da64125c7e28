"""Consent before a tool runs: decide, ask the user when the policy says so, keep what they chose."""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aai_gateway.config import Settings
from aai_gateway.consent.policy import ANSWER_TITLES, Answer, Grant, Verdict, decide
from aai_gateway.consent.store import ConsentStore, State
from aai_gateway.consent.summary import as_text, safe, summarize
from aai_gateway.descriptor import Descriptor, Tool
from aai_gateway.errors import ConsentRequired, PermissionDenied

CONSENT_FILE = "consent.json"
UI_PATH = "/ui/consent"
HOLD_POLL = 0.2
"""Seconds between looks at the decisions while a call waits for one (the CLI decides from another process)."""
MAX_VERDICTS = 4096
"""Verdicts kept at most; callers name themselves, so there may be any number of them."""


@dataclass(frozen=True, slots=True)
class Question:
    """What the user is asked: may `caller` run `app`'s `tool` with these arguments?"""

    caller: str
    app: str
    app_name: str
    tool: str
    description: str
    arguments: tuple[tuple[str, str], ...]
    destructive: bool = False
    text: str = ""
    """the whole question, when it is not about running a tool (starting an MCP server)"""
    choices: tuple[tuple[Answer, str], ...] = ()
    """the answers offered with their titles, when not every one of `ANSWER_TITLES`"""

    def titles(self) -> dict[Answer, str]:
        return dict(self.choices) if self.choices else ANSWER_TITLES

    def message(self) -> str:
        if self.text:
            return self.text
        lines = [
            f'"{safe(self.caller)}" wants to run {safe(self.tool)} of {safe(self.app_name)} ({safe(self.app)}).',
            f"Arguments: {as_text(self.arguments)}",
        ]
        if self.description:
            lines.append(f"What it does: {safe(self.description, 200)}")
        if self.destructive:
            lines.append(DESTRUCTIVE_NOTE)
        return "\n".join(lines)


DESTRUCTIVE_NOTE = (
    "Its app marks it destructive: it may delete or overwrite data. "
    '"Always allow every tool of this app" does not cover it; "Always allow this tool" does.'
)


Ask = Callable[[Question], Awaitable[Answer | None]]
"""Asks the user and returns their answer, or None when they could not be asked or gave none."""


class ConsentGate:
    """One per gateway. `ui_url`, when set, is the web UI page where pending requests are decided."""

    def __init__(self, settings: Settings, store: ConsentStore | None = None) -> None:
        self.settings = settings
        self.store = store or ConsentStore(settings.aai_home / CONSENT_FILE)
        self.ui_url: str | None = None
        self._verdicts: dict[tuple[str, str, str, bool, bool, bool], Verdict] = {}
        self._verdicts_of: tuple[Settings, State] | None = None
        """The settings and stored decisions the kept verdicts were worked out from."""

    def verdict(
        self,
        caller: str,
        app: str,
        tool: str,
        *,
        trusted: bool = False,
        read_only: bool = False,
        destructive: bool = False,
    ) -> Verdict:
        """How a call is to be decided; worked out once for the same call while the config and the stored
        decisions stay the same (a verdict that uses a one-time decision is worked out every time)."""
        settings, state = self.settings, self.store.state()
        kept = self._verdicts_of
        if kept is None or kept[0] is not settings or kept[1] is not state or len(self._verdicts) >= MAX_VERDICTS:
            self._verdicts.clear()
            self._verdicts_of = (settings, state)
        key = (caller, app, tool, trusted, read_only, destructive)
        found = self._verdicts.get(key)
        if found is not None:
            return found
        found = decide(
            state.decisions,
            settings.consent_rules,
            settings.consent_default,
            caller=caller,
            app=app,
            tool=tool,
            trusted=trusted,
            read_only=read_only,
            destructive=destructive,
            read_only_default=settings.consent_read_only,
        )
        if found.grant is None or not found.grant.once:
            self._verdicts[key] = found
        return found

    async def check(
        self,
        caller: str,
        app: Descriptor,
        tool: Tool,
        args: Mapping[str, Any],
        *,
        app_key: str | None = None,
        trusted: bool = False,
        ask: Ask | None = None,
        transport: str = "",
        marks_trusted: bool = True,
        asked: Callable[[str], None] | None = None,
    ) -> None:
        """Return when the call may run; raise PermissionDenied or ConsentRequired when it may not.

        When the user is asked, `asked` is told how the question ended: the `Answer` given, "decided"
        (in the UI or with the CLI while the call waited) or "unanswered".

        Decisions are kept under `app_key`, by default the app's id (a discovered web app's is its site).
        Without `marks_trusted` (a descriptor a website gave about itself), a read-only mark lets nothing
        run unasked; a destructive mark is always heeded, since it only asks more.
        """
        app_id = app_key or app.app_id
        read_only, destructive = tool.read_only and marks_trusted, tool.destructive
        decided = self.verdict(caller, app_id, tool.name, trusted=trusted, read_only=read_only, destructive=destructive)
        if decided.mode == "allow" and (decided.grant is None or not decided.grant.once):
            return  # the common case, without the closure below made for it

        def verdict() -> Verdict:
            return self.verdict(
                caller, app_id, tool.name, trusted=trusted, read_only=read_only, destructive=destructive
            )

        while decided.grant is not None and decided.grant.once and not self.store.use(decided.grant.id):
            decided = verdict()  # another call used it first
        if decided.mode == "allow":
            return
        if decided.mode == "deny":
            raise PermissionDenied(self._refused(caller, app_id, tool.name, decided))
        arguments = summarize(args, tool.parameters)
        answer = None
        if ask is not None:
            answer = await ask(_question(caller, app, app_id, tool, arguments))
        if answer is None:
            request = self.store.ask_later(caller, app_id, tool.name, arguments, transport, destructive=destructive)
            holds = ask is None and self.ui_url and self.settings.consent_wait_seconds > 0
            if holds and await self._held(verdict):
                if asked is not None:
                    asked("decided")
                await self.check(
                    caller,
                    app,
                    tool,
                    args,
                    app_key=app_key,
                    trusted=trusted,
                    transport=transport,
                    marks_trusted=marks_trusted,
                )
                return
            if asked is not None:
                asked("unanswered")
            raise ConsentRequired(
                self._how_to_approve(
                    caller, app_id, tool.name, request.id, asked=ask is not None, destructive=destructive
                )
            )
        if asked is not None:
            asked(answer.value)
        grant = self._keep(answer, caller, app_id, tool.name)
        if not answer.allows:
            kept = (
                f"; stored as decision {grant.id} (`aai-gateway consent revoke --id {grant.id}` undoes it)"
                if grant
                else ""
            )
            raise PermissionDenied(f'the user refused "{safe(caller)}" running {app_id}:{tool.name}{kept}')

    def question(
        self,
        caller: str,
        app: Descriptor,
        tool: Tool,
        args: Mapping[str, Any],
        *,
        app_key: str | None = None,
        marks_trusted: bool = True,
    ) -> Question | None:
        """The question `check` would put about this call (for a caller not at the CLI), or None when the
        decisions, rules or defaults settle it; a one-time allow is left for the call to use."""
        app_id = app_key or app.app_id
        read_only = tool.read_only and marks_trusted
        if self.verdict(caller, app_id, tool.name, read_only=read_only, destructive=tool.destructive).mode != "ask":
            return None
        return _question(caller, app, app_id, tool, summarize(args, tool.parameters))

    async def _held(self, verdict: Callable[[], Verdict]) -> bool:
        """Wait for someone to decide in the UI or with the CLI; True once a decision applies."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.consent_wait_seconds
        while loop.time() < deadline:
            await asyncio.sleep(min(HOLD_POLL, max(0.0, deadline - loop.time())))
            if verdict().mode != "ask":
                return True
        return False

    def _keep(self, answer: Answer, caller: str, app: str, tool: str) -> Grant | None:
        if answer is Answer.TOOL:
            return self.store.allow(app, caller, tool, source="asked")
        if answer is Answer.APP:
            return self.store.allow(app, caller, None, source="asked")
        if answer is Answer.NEVER:
            return self.store.deny(app, caller, tool, source="asked")
        return None

    def _refused(self, caller: str, app: str, tool: str, verdict: Verdict) -> str:
        head = f'"{safe(caller)}" may not run tool "{tool}" of {app}: refused by {verdict.why}'
        if verdict.grant is not None:
            return f"{head}; `aai-gateway consent revoke --id {verdict.grant.id}` removes that decision"
        where = self.settings.config_file or self.settings.aai_home / "config.json"
        return f"{head}; change consent in {where}, or allow it with `{command('allow', caller, app, tool)}`"

    def _how_to_approve(
        self, caller: str, app: str, tool: str, request_id: str, *, asked: bool, destructive: bool = False
    ) -> str:
        why = "the user gave no answer" if asked else "this client cannot ask the user (no MCP elicitation)"
        ui = f", or decide pending request {request_id} at {self.ui_url}" if self.ui_url else ""
        scope = (
            f"(it is marked destructive, so an allow for every tool of {app} does not cover it)"
            if destructive
            else f"(without --tool for every tool of {app})"
        )
        return (
            f'"{safe(caller)}" needs the user\'s consent to run tool "{tool}" of {app}, and {why}. '
            f"Approve it with `{command('allow', caller, app, tool)}` {scope}{ui}, then call again."
        )


def _question(
    caller: str, app: Descriptor, app_id: str, tool: Tool, arguments: tuple[tuple[str, str], ...]
) -> Question:
    return Question(caller, app_id, app.name, tool.name, tool.description, arguments, tool.destructive)


_PLAIN = re.compile(r"[\w .@:+/-]+")


def command(verb: str, caller: str | None, app: str, tool: str | None = None) -> str:
    """The `aai-gateway consent` command line, quoted for a shell (names come from clients and descriptors)."""
    parts = ["aai-gateway", "consent", verb]
    if caller is not None:
        shown = f'"{caller}"' if _PLAIN.fullmatch(caller) else shlex.quote(caller)
        parts += ["--caller", shown]
    parts.append(shlex.quote(app))
    if tool is not None:
        parts += ["--tool", shlex.quote(tool)]
    return " ".join(parts)

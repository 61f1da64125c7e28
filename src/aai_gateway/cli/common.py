"""What every command shares: reading the settings once, and failing with a message."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from aai_gateway import paths
from aai_gateway.calls import Caller
from aai_gateway.config import Settings, load_settings
from aai_gateway.errors import ConfigError
from aai_gateway.history import HISTORY_FILE, STATUSES, HistoryStore, read_time

if TYPE_CHECKING:
    from aai_gateway.service import Gateway

T = TypeVar("T")

CLI_CALLER = Caller(name="cli", transport="cli")
"""You at your own terminal: never asked for consent, refused only by a rule or a stored decision."""


def fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"aai-gateway: {message}", err=True)
    sys.exit(code)


def on_gateway(settings: Settings, work: Callable[[Gateway], Awaitable[T]]) -> T:
    """`work` done on a gateway of `settings`, which is closed after it (its MCP servers stopped) however
    it ended; its errors are the caller's to report."""
    from aai_gateway.service import Gateway

    gateway = Gateway(settings)

    async def run() -> T:
        try:
            return await work(gateway)
        finally:
            await gateway.aclose()

    return asyncio.run(run())


def settings_of(ctx: click.Context) -> Settings:
    obj: dict[str, Any] = ctx.ensure_object(dict)
    if "settings" not in obj:
        env = dict(paths.environ())
        if obj.get("platform"):
            env["AAI_PLATFORM"] = obj["platform"]
        try:
            settings = load_settings(env, obj.get("config"))
        except ConfigError as exc:
            fail(f"the configuration is invalid:\n{exc}")
        if obj.get("platform"):
            settings = settings.from_option("--platform", platform=obj["platform"])
        if obj.get("log_level"):
            settings = settings.from_option("--log-level", log_level=obj["log_level"])
        obj["settings"] = settings
    result: Settings = obj["settings"]
    return result


class TimeParam(click.ParamType[datetime]):
    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            moment, note = read_time(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if note:
            click.echo(f"note: {param.opts[0] if param is not None and param.opts else 'a time'} {note}", err=True)
        return moment


def terminal_safe(text: str) -> str:
    """Control characters shown as escapes, so that recorded text cannot drive the terminal."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def history_store(ctx: click.Context) -> HistoryStore:
    """The call history of the AAI home the settings name."""
    settings = settings_of(ctx)
    return HistoryStore(settings.aai_home / HISTORY_FILE, settings.history_retention_days)


Command = TypeVar("Command", bound=Callable[..., Any])


def history_filters(command: Command) -> Command:
    """The options that choose calls of the history (--app, --tool, --status, --caller, --since, --until),
    as every command reading the history takes them."""
    options = (
        click.option("--app", help="Only calls to this app id."),
        click.option("--tool", help="Only calls of this tool."),
        click.option("--status", type=click.Choice(STATUSES), help="Only calls that succeeded, or that failed."),
        click.option("--caller", help="Only calls from this client (its MCP clientInfo name, or cli)."),
        click.option(
            "--since", type=TimeParam(), help="From this time on: ISO (UTC unless a zone is given) or an age: 2h, 7d."
        ),
        click.option("--until", type=TimeParam(), help="Up to this time, in the same forms as --since."),
    )
    for option in reversed(options):
        command = option(command)
    return command


def check_range(since: datetime | None, until: datetime | None) -> None:
    if since is not None and until is not None and since > until:
        raise click.UsageError("--since is later than --until")


def result_text(result: Any, app: str, tool: str, *, as_json: bool = False) -> str:
    """A call's result as `call` prints it: text as it is, the rest as JSON; on a terminal, no result in words."""
    if result is None and not as_json and sys.stdout.isatty():
        return f"{app} {tool}: the call succeeded, with no result."
    if isinstance(result, str) and not as_json:
        return result
    return json.dumps(result, ensure_ascii=False, indent=2)

"""aai_wait: the first occurrence of an app's event that passes a filter, or word that none came in time.

Waiting is a read of the app: the consent gate treats it as a read-only tool of the app named
`(wait) <event>`, and the history records it as a call of that tool. It holds no call slot while it waits.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping
from typing import Any

from aai_gateway import expressions
from aai_gateway.calls import Caller, Calls
from aai_gateway.consent.launches import asked_by
from aai_gateway.descriptor.model import Annotations, Descriptor, Event, Tool
from aai_gateway.errors import InvalidParams, ToolNotFound
from aai_gateway.events.hub import Events
from aai_gateway.events.schema import MAX_TIMEOUT as MAX_TIMEOUT  # noqa: PLC0414 (also said here, where waits are checked)
from aai_gateway.events.schema import OUTPUT_SCHEMA as OUTPUT_SCHEMA  # noqa: PLC0414

PROGRESS_EVERY = 5.0
"""Seconds between progress notifications while a wait goes on (when the client asked for them)."""
WAIT_PREFIX = "(wait) "


def checked(arguments: Mapping[str, Any], name: str) -> tuple[str, str, str | None, float]:
    """The app, event, filter and timeout of an aai_wait call; INVALID_PARAMS says which is wrong."""
    app, event, filter, timeout = (arguments.get(k) for k in ("app", "event", "filter", "timeout"))
    if not isinstance(app, str) or not app:
        raise InvalidParams(f"{name} needs 'app' as a non-empty string (an app id)")
    if not isinstance(event, str) or not event:
        raise InvalidParams(f"{name} needs 'event' as a non-empty string (an event the app's guide lists)")
    if filter is not None and not isinstance(filter, str):
        raise InvalidParams(f"{name} needs 'filter' as a JMESPath query string over the payload, or none")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout):
        raise InvalidParams(f"{name} needs 'timeout' as a number of seconds, at most {MAX_TIMEOUT}")
    if not 0 < timeout <= MAX_TIMEOUT:
        raise InvalidParams(f"{name} needs 'timeout' above 0 and at most {MAX_TIMEOUT} seconds, got {timeout:g}")
    if filter:
        try:
            expressions.compiled(filter, "filter")
        except expressions.ExpressionError as exc:
            raise InvalidParams(str(exc)) from None
    return app, event, filter or None, float(timeout)


async def app_event(calls: Calls, app: Descriptor, name: str, caller: Caller) -> tuple[Descriptor, Event]:
    """`app` and its event `name`; an MCP server's app that does not declare it is looked at as served, with
    the events its server's capabilities offer (the server started if need be, with the caller's yes)."""
    if app.event(name) is None and app.mcp is not None:
        app = await asked_by(caller.name, caller.ask, calls.servers.live(app))
    return app, event_of(app, name)


def event_of(app: Descriptor, name: str) -> Event:
    found = app.event(name)
    if found is None:
        listed = ", ".join(e.name for e in app.events) or "none"
        raise ToolNotFound(f"{app.app_id} has no event '{name}'; its events are: {listed} (see its guide)")
    return found


def wait_tool(event: Event) -> Tool:
    """The read-only tool a wait counts as, for consent and the history."""
    return Tool(
        name=WAIT_PREFIX + event.name,
        description=event.description,
        parameters={"type": "object", "properties": {}},
        annotations=Annotations(read_only=True),
    )


async def wait(events: Events, calls: Calls, arguments: Mapping[str, Any], caller: Caller, name: str) -> dict[str, Any]:
    app_id, event_name, filter, timeout = checked(arguments, name)
    app, event = await app_event(calls, await calls.apps.resolve(app_id), event_name, caller)
    tool = wait_tool(event)

    async def work(call_id: str) -> dict[str, Any]:
        await calls.consent.check(
            caller.name,
            app,
            tool,
            {},
            trusted=caller.transport == "cli",
            ask=caller.ask,
            transport=caller.transport,
        )
        if caller.begun is not None:
            caller.begun()
        return await _waited(events, app, event, filter, timeout=timeout, caller=caller)

    answer: dict[str, Any] = await calls.run(app.app_id, tool.name, dict(arguments), caller, work)
    return answer


async def _waited(
    events: Events, app: Descriptor, event: Event, filter: str | None, *, timeout: float, caller: Caller
) -> dict[str, Any]:
    """The first occurrence; progress notifications (when asked for) begin once the source listens, so a
    client knows from the first one that nothing from then on is missed."""
    started = asyncio.get_running_loop().time()
    progress: asyncio.Future[None] | None = None
    try:
        async with asyncio.timeout(timeout):  # the source's start counts against the timeout too
            try:
                subscription = await events.subscribe(app, event, filter, caller)
            except expressions.ExpressionError as exc:
                raise InvalidParams(str(exc)) from None
            async with subscription:
                if caller.relay is not None:
                    progress = asyncio.ensure_future(_progress(caller, event, started, timeout))
                occurrence = await subscription.next()
    except TimeoutError:
        return {"app": app.app_id, "event": event.name, "timedOut": True}
    finally:
        if progress is not None:
            progress.cancel()
    found = occurrence.to_json() | {"timedOut": False}
    return found | ({"dropped": subscription.dropped} if subscription.dropped else {})


async def _progress(caller: Caller, event: Event, started: float, timeout: float) -> None:
    """A progress notification every `PROGRESS_EVERY` seconds: how long the wait has gone on, of how long."""
    assert caller.relay is not None
    loop = asyncio.get_running_loop()
    while True:
        waited = loop.time() - started
        try:
            await caller.relay.progress(round(waited, 1), timeout, f"waiting for {event.name}")
        except Exception:
            return
        await asyncio.sleep(PROGRESS_EVERY)


def text(answer: Mapping[str, Any]) -> str:
    """The answer for the model to read."""
    if answer.get("timedOut"):
        return f"No {answer['event']} event from {answer['app']} came within the timeout."
    return json.dumps({k: v for k, v in answer.items() if k != "timedOut"}, ensure_ascii=False)

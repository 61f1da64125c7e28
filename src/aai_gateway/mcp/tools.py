"""The gateway's tools by the names a client calls them, and how a call of one is served.

Everything here is the same whichever path a call takes: the SDK's request handling, the stdio and
HTTP fast paths (mcp/wire/), or a stdio session served before the SDK is imported. It imports nothing
of the SDK, so that a session can be served without it; results are plain JSON (mcp/results.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from aai_gateway import json_text
from aai_gateway.errors import InvalidParams
from aai_gateway.mcp.names import Names, Target
from aai_gateway.mcp.results import ToolResult, forwarded, tool_result
from aai_gateway.service import MAX_BATCH, Caller, Forwarded, Gateway
from aai_gateway.text import unencodable

log = logging.getLogger(__name__)

_RESULT_TEXT = json_text.encoder()


class Tools:
    """The tools of one Gateway: their names, worked out again after the apps change, and their calls."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._names: Names | None = None

    @property
    def names(self) -> Names:
        if self._names is None:
            settings = self.gateway.settings
            self._names = Names(self.gateway.apps(), settings.platform, settings.tool_names)
            for collision in self._names.collisions:
                log.warning("%s", collision)
        return self._names

    def forget(self) -> None:
        """The apps changed: work the names out again when next asked."""
        self._names = None

    async def run(
        self, caller: Caller, target: Target, arguments: dict[str, Any], meta: Mapping[str, Any] | None = None
    ) -> ToolResult:
        """Serve a call of one of the gateway's tools; `meta` is the request's `params._meta`."""
        if meta and self.gateway.telemetry is not None:
            caller = replace(caller, trace=meta)
        if target.kind == "guide":
            return _text(await self.gateway.guide_live(target.app_id, caller))
        if target.kind == "exec":
            app, tool, args = _exec_arguments(arguments, self.names.exec)
            return _result(await self.gateway.call(app, tool, args, caller))
        if target.kind == "direct":
            return _result(await self.gateway.call(target.app_id, target.tool, arguments, caller))
        if target.kind == "search":
            text, found = await self.gateway.search(arguments.get("query"), arguments.get("limit"))
            return tool_result(text, found)
        if target.kind == "install":
            return _text(await self.gateway.install(arguments.get("app"), caller))
        if target.kind == "batch":
            calls, parallel, stop_on_error = _batch_arguments(arguments, self.names.batch)
            report = await self.gateway.batch(calls, caller, parallel=parallel, stop_on_error=stop_on_error)
            return tool_result(_RESULT_TEXT(report), report)
        field = unencodable(arguments, "")
        if field is not None:
            raise InvalidParams(f"{field[1:]} holds half of a surrogate pair (a lone \\ud800-\\udfff escape)")
        if target.kind == "wait":
            text, answer = await self.gateway.wait(arguments, caller)
            return tool_result(text, answer)
        if target.kind == "run":
            text, report, failed = await self.gateway.run(arguments, caller)
            return tool_result(text, report, is_error=failed)
        url = arguments.get("url")
        if not isinstance(url, str) or not url.strip():
            raise InvalidParams(f"{self.names.discover} needs 'url' as a non-empty string: a web app's domain or URL")
        return _text(self.gateway.guide_of(await self.gateway.discover(url)))


def _exec_arguments(arguments: dict[str, Any], name: str) -> tuple[str, str, dict[str, Any]]:
    app, tool, args = arguments.get("app"), arguments.get("tool"), arguments.get("args", {})
    if not isinstance(app, str) or not app:
        raise InvalidParams(f"{name} needs 'app' as a non-empty string (an app id)")
    if not isinstance(tool, str) or not tool:
        raise InvalidParams(f"{name} needs 'tool' as a non-empty string (an operation name from the guide)")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise InvalidParams(f"{name} needs 'args' as an object of named arguments, got {type(args).__name__}")
    return app, tool, args


def _batch_arguments(arguments: dict[str, Any], name: str) -> tuple[list[Any], bool, bool]:
    calls, parallel, stop = arguments.get("calls"), arguments.get("parallel", True), arguments.get("stopOnError", False)
    if not isinstance(calls, list):
        raise InvalidParams(f"{name} needs 'calls' as an array of {{app, tool, args}} objects (1 to {MAX_BATCH})")
    for key, value in (("parallel", parallel), ("stopOnError", stop)):
        if not isinstance(value, bool):
            raise InvalidParams(f"{name} needs '{key}' as true or false, got {type(value).__name__}")
    return calls, parallel, stop


def _text(text: str) -> ToolResult:
    return tool_result(text)


def _result(value: Any) -> ToolResult:
    if isinstance(value, Forwarded):  # an MCP server's own answer: its content blocks as they came
        return forwarded(value)
    return tool_result(value if isinstance(value, str) else _RESULT_TEXT(value))

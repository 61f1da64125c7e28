"""macOS: AppleScript and JXA templates, and the Apple Event envelope, run through `osascript`.

A template is rewritten once per tool into a script that binds its values from `on run argv` (or
JXA's `run(argv)`); the script goes to `osascript -` on stdin and the values follow as separate
arguments, with no shell in between, so no argument can change what runs. The process is killed
when the tool's timeout passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import shutil
from collections.abc import Mapping
from typing import Any, Protocol

from aai_gateway.config import Settings
from aai_gateway.errors import AaiJsonInvalid, AutomationFailed, AutomationNotSupported, InvalidParams, Timeout
from aai_gateway.executors import envelope
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.osascript_errors import translate

APPLE_EVENT = "«event aaiEexec»"
"""The one Apple Event (class 'aaiE', id 'exec') an app implements to take the JSON envelope."""

APPLE_EVENT_SCRIPT = f"""on run argv
\twith timeout of (item 3 of argv as integer) seconds
\t\ttell application id (item 1 of argv)
\t\t\treturn {APPLE_EVENT} (item 2 of argv)
\t\tend tell
\tend timeout
end run
"""
"""Fixed source: the bundle id, the request and the timeout arrive as arguments, never as code."""

LANGUAGE_FLAGS = {"applescript": (), "jxa": ("-l", "JavaScript"), "apple-events": ()}


class Prepared(Protocol):
    @property
    def source(self) -> str: ...

    def argv(self, args: Mapping[str, Any]) -> list[str]: ...


class OsascriptExecutor:
    def __init__(self, settings: Settings | None = None) -> None:
        self._prepared: dict[tuple[str, str, str], Prepared] = {}

    async def execute(self, call: ToolCall) -> Any:
        automation = call.binding.automation
        program = shutil.which("osascript")
        if program is None:
            raise AutomationNotSupported(
                f"{automation} runs through osascript, which exists only on macOS; it is not on this machine "
                f"(platform {call.binding.platform})"
            )
        parser = str(call.tool.options.get("output_parser") or "result as text")
        if automation == "apple-events":
            bundle = str(call.binding.options.get("bundle_id") or call.app.app_id)
            argv = [bundle, envelope.request(call), str(max(1, round(call.timeout)))]
            source = APPLE_EVENT_SCRIPT
        else:
            prepared = self._prepare(call)
            argv, source = prepared.argv(call.args), prepared.source
        flags = [*LANGUAGE_FLAGS[automation], *(("-s", "s") if parser == "result as record" else ())]
        what = f"{call.app.app_id}'s {call.tool.name}"
        out = await _run([program, *flags, "-", *argv], source, call.timeout, what)
        if automation == "apple-events":
            return envelope.response(out, what)
        return parse_output(out, parser, what)

    async def aclose(self) -> None:
        return None

    def _prepare(self, call: ToolCall) -> Prepared:
        template = call.tool.options.get("script")
        if not isinstance(template, str):
            raise AaiJsonInvalid(f"{call.app.app_id}'s {call.tool.name} has no script template")
        parameters = call.tool.parameters
        key = (call.binding.automation, template, json.dumps(parameters, sort_keys=True))
        prepared = self._prepared.get(key)
        if prepared is None:
            if call.binding.automation == "jxa":
                from aai_gateway.executors import jxa  # noqa: PLC0415 (each language's rewriter on first use)

                prepared = jxa.prepare(template, parameters)
            else:
                from aai_gateway.executors import applescript  # noqa: PLC0415

                prepared = applescript.prepare(template, parameters)
            self._prepared[key] = prepared
        return prepared


async def _run(command: list[str], source: str, timeout: float, what: str) -> str:
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as e:
        if e.errno == errno.E2BIG:
            raise InvalidParams(
                f"{what}: the arguments are too large to pass to osascript (the system allows about 1 MiB in all)"
            ) from None
        raise AutomationFailed(f"{what}: osascript could not be started: {e.strerror or e}") from None
    try:
        async with asyncio.timeout(timeout):
            stdout, stderr = await process.communicate(source.encode())
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise Timeout(f"{what} did not finish within {timeout:g} s; osascript was stopped") from None
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise
    if process.returncode != 0:
        raise translate(stderr.decode(errors="replace"), process.returncode or 0, what)
    text = stdout.decode(errors="replace")
    return text[:-1] if text.endswith("\n") else text


def parse_output(text: str, parser: str, what: str) -> Any:
    """`result as text` (JSON object or array text becomes JSON), `result as record`, or `json`."""
    if parser == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise AutomationFailed(f"{what} returned text that is not JSON: {e}") from None
    if parser == "result as record":
        from aai_gateway.executors.applescript_records import parse_record  # noqa: PLC0415

        try:
            return parse_record(text)
        except ValueError as e:
            raise AutomationFailed(f"{what} returned something that is not an AppleScript record: {e}") from None
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(stripped)
    return text

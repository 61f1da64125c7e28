"""Windows COM through pywin32: shape A's action list interpreted against COM objects (`com`), or the
B/C JSON envelope handed to one object's `Execute(request) -> response` (`com-ipc`).

pywin32 is imported when a call runs, never when this module is, so the package imports on every OS.
Each call runs in its own thread with COM initialised there; values reach the app only as call
arguments and property values, never as PowerShell or any other source.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import platform
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from aai_gateway.config import Settings
from aai_gateway.errors import AaiError, AaiJsonInvalid, AutomationFailed, AutomationNotSupported, Timeout
from aai_gateway.executors import envelope
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.com_actions import Action, plain, plan, run
from aai_gateway.executors.com_errors import NoMember, Site, from_exception

PARSERS = ("last_result", "json", "string")


@dataclass(frozen=True, slots=True)
class Pywin32:
    """The few pieces of pywin32 the executor uses."""

    dispatch: Callable[[str], Any]
    co_initialize: Callable[[], Any]
    co_uninitialize: Callable[[], Any]
    com_error: type[BaseException]


def pywin32() -> Pywin32:
    """pywin32's modules, or AutomationNotSupported where they cannot be imported."""
    try:
        pythoncom = import_module("pythoncom")
        pywintypes = import_module("pywintypes")
        client = import_module("win32com.client")
    except ImportError:
        host = platform.system() or sys.platform
        raise AutomationNotSupported(
            f"COM automation needs Windows with pywin32 installed (pip install pywin32); this gateway runs on "
            f"{host}, where pywin32 cannot be imported"
        ) from None
    return Pywin32(client.Dispatch, pythoncom.CoInitialize, pythoncom.CoUninitialize, pywintypes.com_error)


class ComExecutor:
    def __init__(self, settings: Settings | None = None) -> None:
        self._plans: dict[tuple[str, str, str], tuple[Any, tuple[Action, ...]]] = {}

    async def execute(self, call: ToolCall) -> Any:
        what = f"{call.app.app_id}'s {call.tool.name}"
        if call.binding.automation == "com-ipc":
            progid = str(call.binding.options.get("progid") or call.app.app_id)
            request = envelope.request(call)
            com = pywin32()
            answer = await in_com_thread(com, lambda: send_envelope(com, progid, request), call.timeout, what)
            return envelope.response(answer, f"{progid}.Execute")
        actions = self._plan(call, what)
        parser = str(call.tool.options.get("output_parser") or "last_result")
        if parser not in PARSERS:
            raise AaiJsonInvalid(f"{what}: output_parser must be one of {', '.join(PARSERS)}; got '{parser}'")
        values = _values(call)
        com = pywin32()
        result = await in_com_thread(
            com, lambda: plain(run(actions, values, com.dispatch, com.com_error)), call.timeout, what
        )
        return parse_output(result, parser, what)

    async def aclose(self) -> None:
        self._plans.clear()

    def _plan(self, call: ToolCall, what: str) -> tuple[Action, ...]:
        """The tool's checked actions, cached while the descriptor keeps the same script."""
        script = call.tool.options.get("script")
        key = (call.app.app_id, call.binding.platform, call.tool.name)
        cached = self._plans.get(key)
        if cached is not None and cached[0] is script:
            return cached[1]
        progid = call.binding.options.get("progid")
        try:
            actions = plan(script, progid if isinstance(progid, str) else None)
        except AaiJsonInvalid as exc:
            raise AaiJsonInvalid(f"{what}: {exc.detail}") from None
        self._plans[key] = (script, actions)
        return actions


def send_envelope(com: Pywin32, progid: str, request: str) -> Any:
    """`Dispatch(progid).Execute(request)`; runs in a COM thread."""
    site = Site(progid, f"{progid}.Execute", progid, "Execute")
    try:
        app = com.dispatch(progid)
        try:
            execute = app.Execute
        except AttributeError as exc:
            raise NoMember(str(exc)) from None
        return plain(execute(request))
    except Exception as exc:
        raise from_exception(exc, site, com.com_error) from None


async def in_com_thread(com: Pywin32, work: Callable[[], Any], timeout: float, what: str) -> Any:
    """`work()` in a new thread with COM initialised, awaited for at most `timeout` seconds.

    A COM call cannot be interrupted, so after a timeout its thread is left to finish on its own. Each
    call therefore gets its own daemon thread rather than a pool worker: a hung app would hold a worker
    forever and starve other calls, and a pool's threads would keep the gateway from exiting.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: AaiError | None) -> None:
        if done.done():  # timed out or cancelled meanwhile
            return
        if error is None:
            done.set_result(value)
        else:
            done.set_exception(error)

    def main() -> None:
        value, error = in_apartment(com, work)
        with contextlib.suppress(RuntimeError):  # the event loop closed while the app was busy
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=main, name=f"COM {what}", daemon=True).start()
    try:
        async with asyncio.timeout(timeout):
            return await done
    except TimeoutError:
        raise Timeout(
            f"{what} did not finish within {timeout:g} s; a COM call cannot be interrupted, so the app may still "
            "complete it"
        ) from None


def in_apartment(com: Pywin32, work: Callable[[], Any]) -> tuple[Any, AaiError | None]:
    """`work()` between CoInitialize and CoUninitialize in this thread, as (value, None) or (None, error).

    An error is handed back as a fresh copy: the raised one's traceback holds the script's COM objects,
    which must be released here, before CoUninitialize, not later on the event loop's thread."""
    try:
        com.co_initialize()
    except Exception as exc:
        return None, AutomationFailed(f"COM could not be initialised for the call: {exc}")
    try:
        return work(), None
    except AaiError as exc:
        return None, type(exc)(exc.detail)
    except Exception as exc:
        return None, AutomationFailed(f"{type(exc).__name__}: {exc}")
    finally:
        com.co_uninitialize()


def _values(call: ToolCall) -> dict[str, Any]:
    """The call's arguments over the schema's defaults."""
    props: Mapping[str, Any] = call.tool.parameters.get("properties", {})
    values = {name: spec["default"] for name, spec in props.items() if isinstance(spec, Mapping) and "default" in spec}
    values.update(call.args)
    return values


def parse_output(value: Any, parser: str, what: str) -> Any:
    """`last_result`: JSON object or array text is parsed, anything else kept; `json`: text must parse;
    `string`: text (None → "", other values as JSON text)."""
    if parser == "string":
        if isinstance(value, str):
            return value
        return "" if value is None else json.dumps(value, ensure_ascii=False)
    if not isinstance(value, str):
        return value
    if parser == "last_result":
        if not value.lstrip().startswith(("{", "[")):
            return value
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(value)
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise AutomationFailed(
            f"{what} returned text that is not JSON (output_parser is json): {exc.msg} at column {exc.colno}"
        ) from None

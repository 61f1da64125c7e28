"""Automation backends, one module each, registered here by automation type.

Backends are imported only when first needed, so the package imports on every OS even though each
backend's platform library (dbus-fast, pywin32, …) exists only on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module

from aai_gateway.config import Settings
from aai_gateway.executors.base import Executor, Forwarded, ListsTools, ToolCall

BACKENDS: Mapping[str, str] = {
    "dbus": "aai_gateway.executors.dbus:DbusExecutor",
    "ipc": "aai_gateway.executors.dbus:DbusExecutor",
    "restapi": "aai_gateway.executors.http:HttpExecutor",
    "http": "aai_gateway.executors.http:HttpExecutor",
    "applescript": "aai_gateway.executors.osascript:OsascriptExecutor",
    "jxa": "aai_gateway.executors.osascript:OsascriptExecutor",
    "apple-events": "aai_gateway.executors.osascript:OsascriptExecutor",
    "com": "aai_gateway.executors.com:ComExecutor",
    "com-ipc": "aai_gateway.executors.com:ComExecutor",
    "mcp": "aai_gateway.executors.mcp:McpExecutor",
}
"""automation type → "module:class" of its executor."""

WHY_NOT: Mapping[str, str] = {
    "intent": "Android intents are read and checked, but this gateway has no Android executor",
    "url_scheme": "iOS URL schemes are read and checked, but this gateway has no iOS executor",
}


def create(automation: str, settings: Settings) -> Executor | None:
    """A new executor for `automation`, or None when this gateway has none for it."""
    target = BACKENDS.get(automation)
    if target is None:
        return None
    module, _, name = target.partition(":")
    factory = getattr(import_module(module), name)
    executor: Executor = factory(settings)
    return executor


__all__ = ["BACKENDS", "WHY_NOT", "Executor", "Forwarded", "ListsTools", "ToolCall", "create"]

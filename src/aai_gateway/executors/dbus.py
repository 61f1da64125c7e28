"""Linux DBus: call a method with typed arguments on the session (or system) bus.

One connection per bus is kept open and re-opened when it drops. Argument types come from the
method's introspected signature (cached per service, object and interface); services that cannot
be introspected fall back to types derived from the tool's JSON Schema. DBus errors are translated
into the gateway's error tree here and nowhere else.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbus_fast import BusType, DBusError, Message, MessageType
from dbus_fast.aio import MessageBus
from dbus_fast.introspection import Node

from aai_gateway.errors import (
    AaiError,
    AppNotRunning,
    AutomationFailed,
    InvalidParams,
    PermissionDenied,
    Timeout,
)
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.dbus_types import from_dbus, guess_signature, signature_types, to_dbus

log = logging.getLogger(__name__)

NOT_RUNNING = {"org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"}
DENIED = {
    "org.freedesktop.DBus.Error.AccessDenied",
    "org.freedesktop.DBus.Error.AuthFailed",
    "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
}
TIMED_OUT = {"org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.TimedOut"}
NO_REPLY = "org.freedesktop.DBus.Error.NoReply"
NO_INTROSPECTION = {
    "org.freedesktop.DBus.Error.UnknownMethod",
    "org.freedesktop.DBus.Error.UnknownInterface",
    "org.freedesktop.DBus.Error.NotSupported",
}


@dataclass(frozen=True, slots=True)
class Target:
    bus: str
    service: str
    path: str
    interface: str
    method: str

    def __str__(self) -> str:
        return f"{self.interface}.{self.method} on {self.service} {self.path}"


def target_of(call: ToolCall) -> Target:
    """Where a call goes: tool-level `object`/`interface` override the binding's."""
    opts: Mapping[str, Any] = call.binding.options
    tool: Mapping[str, Any] = call.tool.options
    service = str(tool.get("service") or opts.get("service") or call.app.app_id)
    return Target(
        bus=str(tool.get("bus") or opts.get("bus") or "session"),
        service=service,
        path=str(tool.get("object") or opts.get("object") or "/" + service.replace(".", "/")),
        interface=str(tool.get("interface") or opts.get("interface") or service),
        method=str(tool.get("method") or call.tool.name),
    )


class DbusExecutor:
    def __init__(self) -> None:
        self._buses: dict[str, MessageBus] = {}
        self._connecting = asyncio.Lock()
        self._signatures: dict[tuple[str, str, str, str], dict[str, str]] = {}

    async def execute(self, call: ToolCall) -> Any:
        target = target_of(call)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + call.timeout
        try:
            async with asyncio.timeout(call.timeout):
                bus = await self._bus(target.bus)
                signature = await self._signature(bus, target, call)
                body = self._body(call, signature)
                reply = await bus.call(
                    Message(
                        destination=target.service,
                        path=target.path,
                        interface=target.interface,
                        member=target.method,
                        signature=signature,
                        body=body,
                    )
                )
        except TimeoutError:
            waited = call.timeout - max(0.0, deadline - loop.time())
            raise Timeout(f"{call.app.app_id} did not answer {target} within {waited:.3g} s") from None
        except AaiError:
            raise
        except Exception as exc:
            self._forget(target.bus)
            raise AutomationFailed(f"lost the connection to the DBus {target.bus} bus: {exc}") from exc
        if reply.message_type == MessageType.ERROR:
            raise translate(reply.error_name or "", str(reply.body[0]) if reply.body else "", target)
        return parse_output(reply.body, call.tool.options.get("output_parser"), target)

    async def aclose(self) -> None:
        buses, self._buses = self._buses, {}
        for bus in buses.values():
            bus.disconnect()

    async def _bus(self, kind: str) -> MessageBus:
        bus = self._buses.get(kind)
        if bus is not None and bus.connected:
            return bus
        async with self._connecting:
            bus = self._buses.get(kind)
            if bus is not None and bus.connected:
                return bus
            bus_type = BusType.SYSTEM if kind == "system" else BusType.SESSION
            try:
                bus = await MessageBus(bus_type=bus_type).connect()
            except Exception as exc:
                raise AutomationFailed(f"cannot connect to the DBus {kind} bus: {exc}") from exc
            self._buses[kind] = bus
            self._signatures.clear()
            return bus

    def _forget(self, kind: str) -> None:
        self._buses.pop(kind, None)
        self._signatures.clear()

    async def _signature(self, bus: MessageBus, target: Target, call: ToolCall) -> str:
        key = (target.bus, target.service, target.path, target.interface)
        methods = self._signatures.get(key)
        if methods is None or target.method not in methods:
            node = await self._introspect(bus, target)
            if node is None:
                return "".join(guess_signature(s) for s in _properties(call).values())
            methods = _methods(node, target.interface)
            self._signatures[key] = methods
        if target.method not in methods:
            offered = ", ".join(sorted(methods)) or "none"
            raise AutomationFailed(
                f"{target.service} has no method {target.method} on interface {target.interface} at "
                f"{target.path} (it offers: {offered})"
            )
        return methods[target.method]

    async def _introspect(self, bus: MessageBus, target: Target) -> Node | None:
        try:
            return await bus.introspect(target.service, target.path)
        except DBusError as exc:
            if exc.type in NO_INTROSPECTION:
                log.debug("%s cannot be introspected (%s); using types from the schema", target.service, exc.type)
                return None
            raise translate(exc.type, exc.text, target) from None

    def _body(self, call: ToolCall, signature: str) -> list[Any]:
        types = signature_types(signature)
        props = _properties(call)
        names = list(props)
        if len(names) != len(types):
            raise AutomationFailed(
                f"{call.tool.name} gives {len(names)} parameters but the DBus method takes {len(types)} "
                f"arguments (signature '{signature}'); fix the descriptor"
            )
        body = []
        for name, sig in zip(names, types, strict=True):
            if name in call.args:
                value = call.args[name]
            elif "default" in props[name]:
                value = props[name]["default"]
            else:
                raise InvalidParams(f"argument '{name}' is needed by the DBus method and has no default")
            body.append(to_dbus(value, sig, name))
        return body


def _properties(call: ToolCall) -> Mapping[str, Mapping[str, Any]]:
    props: Mapping[str, Mapping[str, Any]] = call.tool.parameters.get("properties", {})
    return props


def _methods(node: Node, interface: str) -> dict[str, str]:
    for iface in node.interfaces:
        if iface.name == interface:
            return {m.name: m.in_signature for m in iface.methods}
    return {}


def translate(error_name: str, text: str, target: Target) -> AaiError:
    """A DBus error reply as the gateway's error, with the app's own words kept in the detail."""
    if error_name in NOT_RUNNING:
        return AppNotRunning(
            f"{target.service} is not on the {target.bus} bus and could not be started; start the app and try again"
        )
    if error_name in DENIED:
        return PermissionDenied(f"the {target.bus} bus refused {target}: {text}")
    if error_name in TIMED_OUT:
        return Timeout(f"{target} timed out: {text}")
    if error_name == NO_REPLY:
        return AppNotRunning(f"{target.service} left the bus before answering {target.method}: {text}")
    return AutomationFailed(f"{target} failed with {error_name}: {text}")


def parse_output(body: list[Any], parser: str | None, target: Target) -> Any:
    values = [from_dbus(v) for v in body]
    value: Any = None if not values else values[0] if len(values) == 1 else values
    if parser == "json" and isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise AutomationFailed(
                f"{target} returned text that is not JSON (output_parser is json): {exc.msg} at column {exc.colno}"
            ) from None
    if parser == "string" and not isinstance(value, str):
        return "" if value is None else json.dumps(value, ensure_ascii=False)
    return value

"""Linux DBus: call methods, read and write properties, or send the `ipc` JSON envelope.

One connection per bus (session, system) is shared by every call and re-opened when it drops.
Argument types come from the target's introspected signature (cached per service, object and
interface); services that cannot be introspected fall back to types derived from the tool's JSON
Schema. A service that is not running but can be activated is started and the call tried once more.
DBus errors are translated into the gateway's error tree here and nowhere else.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio import MessageBus
from dbus_fast.introspection import Node
from dbus_fast.signature import SignatureType
from dbus_fast.validators import is_object_path_valid

from aai_gateway import paths, session_bus, templates
from aai_gateway.config import Settings
from aai_gateway.deadlines import Deadlines
from aai_gateway.descriptor import Binding, instances
from aai_gateway.errors import (
    AaiError,
    AppNotRunning,
    AutomationFailed,
    InvalidParams,
    PermissionDenied,
    Timeout,
)
from aai_gateway.executors import dbus_instances, envelope
from aai_gateway.executors.base import ToolCall
from aai_gateway.executors.dbus_types import from_dbus, guess_signature, signature_types, to_dbus
from aai_gateway.memo import LIMIT, PerObject

log = logging.getLogger(__name__)

NOT_RUNNING = {"org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"}
DENIED = {
    "org.freedesktop.DBus.Error.AccessDenied",
    "org.freedesktop.DBus.Error.AuthFailed",
    "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
}
TIMED_OUT = {"org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.TimedOut"}
NO_REPLY = "org.freedesktop.DBus.Error.NoReply"
SPAWN = "org.freedesktop.DBus.Error.Spawn."
"""Errors of DBus activation: the bus tried to start the service and could not."""
DIED = {SPAWN + "ChildExited", SPAWN + "ChildSignaled"}
NO_INTROSPECTION = {
    "org.freedesktop.DBus.Error.UnknownMethod",
    "org.freedesktop.DBus.Error.UnknownInterface",
    "org.freedesktop.DBus.Error.UnknownObject",
    "org.freedesktop.DBus.Error.NotSupported",
}
PROPERTIES = "org.freedesktop.DBus.Properties"
INTROSPECTABLE = "org.freedesktop.DBus.Introspectable"
ENVELOPE_INTERFACE = "com.aai.Executor"
ENVELOPE_METHOD = "Execute"


@dataclass(frozen=True, slots=True)
class Target:
    bus: str
    service: str
    path: str
    interface: str
    member: str
    property: str | None = None
    access: str = "get"

    def __str__(self) -> str:
        what = f"property {self.property}" if self.property else self.member
        return f"{self.interface}.{what} on {self.service} {self.path}"


def target_of(call: ToolCall) -> Target:
    """Where a call goes: a tool's own `service`, `object`, `interface` and `bus` override the binding's."""
    opts: Mapping[str, Any] = call.binding.options
    tool: Mapping[str, Any] = call.tool.options
    service = str(tool.get("service") or opts.get("service") or call.app.app_id)
    envelope = call.binding.automation == "ipc"
    default_interface = ENVELOPE_INTERFACE if envelope else service
    return Target(
        bus=str(tool.get("bus") or opts.get("bus") or "session"),
        service=service,
        path=_object_path(tool.get("object"), call)
        or str(opts.get("object") or "/" + service.replace(".", "/").replace("-", "_")),
        interface=str(tool.get("interface") or opts.get("interface") or default_interface),
        member=ENVELOPE_METHOD if envelope else str(tool.get("method") or call.tool.name),
        property=None if envelope else tool.get("property"),
        access=str(tool.get("access") or "get"),
    )


def _object_path(template: Any, call: ToolCall) -> str | None:
    """A tool's own object path; `${param}` in it (the whole path, or inside segments) takes the call's
    arguments, so one tool reaches any user, device or item, e.g. `/org/bluez/${adapter}`."""
    if not template:
        return None
    if not templates.names(template):
        return str(template)
    path = _render(template, _values(call))
    if not isinstance(path, str) or not is_object_path_valid(path):
        raise InvalidParams(
            f"the arguments make the DBus object path {json.dumps(path, ensure_ascii=False)}, which is not one "
            f"(/org/example/Thing: '/'-separated parts of letters, digits and '_'); template: {template}"
        )
    return path


CLOSE_WAIT = 2.0
"""Seconds a closing gateway waits for a connection attempt still under way."""


class DbusExecutor:
    def __init__(self, settings: Settings | None = None) -> None:
        self._recorded = settings.session_bus if settings else None
        self._record = (settings.aai_home if settings else paths.aai_home(paths.environ())) / paths.SESSION_BUS_FILE
        self._buses: dict[str, MessageBus] = {}
        self._deadlines = Deadlines()
        self._connecting: dict[str, asyncio.Future[MessageBus]] = {}
        self._nodes: dict[tuple[str, str, str], Node | None] = {}
        self._signatures: dict[tuple[str, str, str, str, str], str] = {}
        """Each method's introspected input signature, read from `_nodes` once."""
        self._targets: PerObject[tuple[Binding, Target | None]] = PerObject()
        """Each tool's target, for tools whose object path takes no arguments (None for the others)."""
        self._shapes: PerObject[_Shape] = PerObject()
        """What a tool's arguments become for a signature (types, templates, schemas), worked out once: the
        same few tools are called again and again."""

    async def execute(self, call: ToolCall) -> Any:
        target = self._target(call)
        deadline = time.monotonic() + call.timeout
        try:
            async with self._deadlines.within(call.timeout):
                bus = self._connected(target.bus) or await self._bus(target.bus)
                picking = instances.of(call.binding) if instances.is_pattern(target.service) else None
                if picking is not None:
                    if instances.lists_instances(call.tool):
                        found = await dbus_instances.running(bus, picking, target.path, details=True)
                        return dbus_instances.listing(picking, found)
                    service = await dbus_instances.pick(bus, picking, target.path, call.args, target.bus)
                    target = replace(target, service=service)
                    call = dbus_instances.without_argument(call, picking)
                message = self._ready_message(target, call)
                if message is None:
                    message = await self._asked_message(bus, target, call)
                body = await self._send(bus, message, target)
        except TimeoutError:
            waited = call.timeout - max(0.0, deadline - time.monotonic())
            raise Timeout(f"{call.app.app_id} did not answer {target} within {waited:.3g} s") from None
        except AaiError:
            raise
        except Exception as exc:
            self._forget(target.bus)
            raise AutomationFailed(f"lost the connection to the DBus {target.bus} bus: {exc}") from exc
        if call.binding.automation == "ipc":
            return parse_envelope(body, target)
        if target.property and target.access == "set":
            return None
        return parse_output(body, call.tool.options.get("output_parser"), target)

    async def aclose(self) -> None:
        pending = [connecting for connecting in self._connecting.values() if not connecting.done()]
        if pending:  # let an attempt finish rather than cancel it halfway (see `_bus`), within reason
            _, late = await asyncio.wait(pending, timeout=CLOSE_WAIT)
            for connecting in late:
                connecting.cancel()
        buses, self._buses = self._buses, {}
        for bus in buses.values():
            bus.disconnect()

    def _ready_message(self, target: Target, call: ToolCall) -> Message | None:
        """The call's message when the app need not be asked for its types (introspected once, or named by
        the descriptor); None otherwise (`_asked_message`)."""
        if call.binding.automation == "ipc":
            return _message(target, target.interface, target.member, "s", [envelope.request(call)])
        if target.property:
            if target.access != "get":
                return None
            return _message(target, PROPERTIES, "Get", "ss", [target.interface, target.property])
        signature = self._known_signature(target, call)
        if signature is None:
            return None
        return _message(target, target.interface, target.member, signature, self._body(call, signature))

    async def _asked_message(self, bus: MessageBus, target: Target, call: ToolCall) -> Message:
        """The call's message once the app has told its types (by introspection) where it must."""
        if target.property:
            variant = await self._property_value(bus, target, call)
            return _message(target, PROPERTIES, "Set", "ssv", [target.interface, target.property, variant])
        signature = await self._method_signature(bus, target, call)
        return _message(target, target.interface, target.member, signature, self._body(call, signature))

    async def bus(self, kind: str) -> MessageBus:
        """The shared connection to the `session` or `system` bus (opened if need be): event sources listen
        for signals on it."""
        try:
            return await self._bus(kind)
        except AaiError:
            raise
        except Exception as exc:
            raise AutomationFailed(f"could not reach the DBus {kind} bus: {exc}") from exc

    def _connected(self, kind: str) -> MessageBus | None:
        """The shared connection to the `kind` bus while it is open: taken without a coroutine."""
        bus = self._buses.get(kind)
        return bus if bus is not None and bus.connected else None

    async def _bus(self, kind: str) -> MessageBus:
        bus = self._connected(kind)
        if bus is not None:
            return bus
        # One connection attempt serves every call waiting for it, and a call cancelled meanwhile does not
        # stop it: dbus-fast closing a half-open socket under the loop's feet is what uvloop aborts on.
        connecting = self._connecting.get(kind)
        if connecting is None or connecting.done():
            connecting = self._connecting[kind] = asyncio.ensure_future(self._connect(kind))
            connecting.add_done_callback(_retrieved)
        return await asyncio.shield(connecting)

    async def _connect(self, kind: str) -> MessageBus:
        bus_type = BusType.SYSTEM if kind == "system" else BusType.SESSION
        recorded = self._recorded if kind == "session" and self._recorded and self._recorded.usable else None
        try:
            bus = await MessageBus(bus_address=recorded.address if recorded else None, bus_type=bus_type).connect()
        except Exception as exc:
            problem = session_bus.connect_problem(kind, exc, paths.environ(), self._recorded, self._record)
            raise AutomationFailed(problem) from exc
        if recorded is not None:
            log.info("DBUS_SESSION_BUS_ADDRESS is not set: using %s", recorded.describe())
        patient(bus)
        self._buses[kind] = bus
        self._nodes.clear()
        return bus

    def _forget(self, kind: str) -> None:
        self._buses.pop(kind, None)
        self._nodes.clear()

    def _target(self, call: ToolCall) -> Target:
        """`target_of(call)`, kept for tools whose object path takes no arguments."""
        found = self._targets.get(call.tool, call.app.app_id)
        if found is not None and found[0] is call.binding:
            return found[1] or target_of(call)
        target = target_of(call)
        templated = templates.names(call.tool.options.get("object") or "")
        self._targets.put(call.tool, (call.binding, None if templated else target), call.app.app_id)
        return target

    async def _send(self, bus: MessageBus, message: Message, target: Target) -> list[Any]:
        """Send and return the reply's body; an activatable service that is not running is started once."""
        reply = await bus.call(message)
        if (
            reply.message_type == MessageType.ERROR
            and reply.error_name in NOT_RUNNING
            and await self._start(bus, target.service)
        ):
            message.serial = 0
            reply = await bus.call(message)
        if reply.message_type == MessageType.ERROR:
            raise translate(reply.error_name or "", str(reply.body[0]) if reply.body else "", target)
        return list(reply.body)

    async def _start(self, bus: MessageBus, service: str) -> bool:
        """Start an activatable service (DBus activation); False when nothing can start it."""
        reply = await bus.call(
            Message(
                destination="org.freedesktop.DBus",
                path="/org/freedesktop/DBus",
                interface="org.freedesktop.DBus",
                member="StartServiceByName",
                signature="su",
                body=[service, 0],
            )
        )
        if reply.message_type == MessageType.ERROR:
            log.debug("%s could not be started: %s %s", service, reply.error_name, reply.body)
            name = reply.error_name or ""
            if name.startswith(SPAWN):
                raise AppNotRunning(activation_failed(service, name, str(reply.body[0]) if reply.body else ""))
            return False
        log.info("started %s by DBus activation", service)
        return True

    async def _node(self, bus: MessageBus, target: Target) -> Node | None:
        key = (target.bus, target.service, target.path)
        if key not in self._nodes:
            introspect = Message(
                destination=target.service, path=target.path, interface=INTROSPECTABLE, member="Introspect"
            )
            try:
                [xml] = await self._send(bus, introspect, target)
                self._nodes[key] = Node.parse(xml)
            except AutomationFailed as exc:
                if not any(name in exc.detail for name in NO_INTROSPECTION):
                    raise
                log.debug("%s cannot be introspected; types come from the schema", target.service)
                self._nodes[key] = None
        return self._nodes[key]

    def _known_signature(self, target: Target, call: ToolCall) -> str | None:
        """The method's input signature as the descriptor pins it or as introspected already, else None."""
        pinned = call.tool.options.get("signature")
        if isinstance(pinned, str):
            return pinned
        place = (target.bus, target.service, target.path)
        known = self._signatures.get((*place, target.interface, target.member))
        return known if known is not None and place in self._nodes else None

    async def _method_signature(self, bus: MessageBus, target: Target, call: ToolCall) -> str:
        known = self._known_signature(target, call)
        if known is not None:
            return known
        place = (target.bus, target.service, target.path)
        node = await self._node(bus, target)
        if node is None:
            return "".join(guess_signature(s) for s in _argument_schemas(call))
        methods = {m.name: m.in_signature for i in node.interfaces if i.name == target.interface for m in i.methods}
        if target.member in methods:
            if len(self._signatures) >= LIMIT:
                self._signatures.clear()
            self._signatures[(*place, target.interface, target.member)] = methods[target.member]
        else:
            self._nodes.pop(place, None)
            offered = ", ".join(sorted(methods)) or "none"
            raise AutomationFailed(
                f"{target.service} has no method {target.member} on interface {target.interface} at "
                f"{target.path} (it offers: {offered})"
            )
        return methods[target.member]

    async def _property_value(self, bus: MessageBus, target: Target, call: ToolCall) -> Variant:
        node = await self._node(bus, target)
        props = {
            p.name: p for i in (node.interfaces if node else []) if i.name == target.interface for p in i.properties
        }
        prop = props.get(target.property or "")
        if node is not None and prop is None:
            raise AutomationFailed(f"{target.service} has no property {target.property} on {target.interface}")
        names = list(call.tool.parameters.get("properties", {}))
        template = call.tool.options.get("value", "${" + names[0] + "}" if len(names) == 1 else None)
        if template is None:
            raise AutomationFailed(
                f"{call.tool.name} sets {target.property} but says neither which argument is the value "
                "(give the tool one parameter, or a `value` template)"
            )
        value = _render(template, _values(call))
        pinned = call.tool.options.get("signature")
        if isinstance(pinned, str):  # the app's introspection data is wrong (VLC 3 calls Shuffle a double)
            signature = pinned
        elif prop is not None:
            signature = prop.signature
        else:
            signature = guess_signature({"type": _json_kind(value)})
        [sig] = signature_types(signature)
        return Variant(signature, to_dbus(value, sig, target.property or "value"))

    def _body(self, call: ToolCall, signature: str) -> list[Any]:
        shape = self._shapes.get(call.tool, signature)
        if shape is None:
            shape = self._shapes.put(call.tool, _shape(call, signature), signature)
        values = {**shape.defaults, **call.args} if shape.defaults else call.args
        return [
            to_dbus(values[whole] if whole and whole in values else _render(template, values), sig, where, schema)
            for template, whole, sig, where, schema in shape.arguments
        ]


@dataclass(frozen=True, slots=True)
class _Shape:
    defaults: Mapping[str, Any]
    """The parameters' defaults in the schema, for arguments not given."""
    arguments: list[tuple[Any, str, SignatureType, str, Mapping[str, Any]]]
    """Each DBus argument: its template, the parameter it is whole (`${name}`, else ""), its type, its name
    in errors and its JSON Schema."""


def _shape(call: ToolCall, signature: str) -> _Shape:
    types = signature_types(signature)
    templates_ = call.tool.options.get("args")
    if templates_ is None:
        templates_ = ["${" + name + "}" for name in call.tool.parameters.get("properties", {})]
    if len(templates_) != len(types):
        raise AutomationFailed(
            f"{call.tool.name} gives {len(templates_)} arguments but the DBus method takes {len(types)} "
            f"(signature '{signature}'); fix the descriptor"
        )
    schemas = _argument_schemas(call)
    props: Mapping[str, Mapping[str, Any]] = call.tool.parameters.get("properties", {})
    return _Shape(
        {name: spec["default"] for name, spec in props.items() if "default" in spec},
        [
            (t, _whole(t), sig, _where(t, i), schemas[i])
            for i, (t, sig) in enumerate(zip(templates_, types, strict=True))
        ],
    )


def _whole(template: Any) -> str:
    whole = templates.PLACEHOLDER.fullmatch(template) if isinstance(template, str) else None
    return whole.group(1) if whole else ""


def _argument_schemas(call: ToolCall) -> list[Mapping[str, Any]]:
    props: Mapping[str, Mapping[str, Any]] = call.tool.parameters.get("properties", {})
    given = call.tool.options.get("args")
    if given is None:
        return list(props.values())
    return [template_schema(t, props) for t in given]


def template_schema(template: Any, props: Mapping[str, Any]) -> Mapping[str, Any]:
    """The JSON Schema of what an argument template gives: a whole `${param}` is that parameter's schema, and
    lists and objects are followed inside, so that a parameter's `signature` keyword reaches a variant in a
    dict such as the Secret Service's `{"org.freedesktop.Secret.Item.Attributes": "${attributes}"}`."""
    if isinstance(template, str):
        whole = templates.PLACEHOLDER.fullmatch(template)
        spec = props.get(whole.group(1)) if whole else None
        return spec if isinstance(spec, Mapping) else {} if whole else {"type": "string"}
    if isinstance(template, list):
        return {"type": "array", "items": [template_schema(t, props) for t in template]}
    if isinstance(template, Mapping):
        return {"type": "object", "properties": {str(k): template_schema(v, props) for k, v in template.items()}}
    return {"type": _json_kind(template)}


def _message(target: Target, interface: str, member: str, signature: str, body: list[Any]) -> Message:
    return Message(
        destination=target.service,
        path=target.path,
        interface=interface,
        member=member,
        signature=signature,
        body=body,
    )


def _retrieved(done: asyncio.Future[Any]) -> None:
    """Mark a connection attempt's failure as seen: every call that waited for it has been told, or was cancelled."""
    if not done.cancelled():
        done.exception()


def _values(call: ToolCall) -> Mapping[str, Any]:
    """The call's arguments, falling back to the schema's defaults."""
    props: Mapping[str, Mapping[str, Any]] = call.tool.parameters.get("properties", {})
    values = {name: spec["default"] for name, spec in props.items() if "default" in spec}
    values.update(call.args)
    return values


def _render(template: Any, values: Mapping[str, Any]) -> Any:
    try:
        return templates.render(template, values)
    except templates.Missing as missing:
        raise InvalidParams(f"argument '{missing.name}' is needed by the DBus call and has no default") from None


def _where(template: Any, index: int) -> str:
    named = _named(template) if isinstance(template, str) else templates.names(template)
    return next(iter(named)) if len(named) == 1 else f"argument {index + 1}"


@lru_cache(maxsize=1024)  # a descriptor's few templates, on every call
def _named(template: str) -> frozenset[str]:
    return frozenset(templates.names(template))


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"


def translate(error_name: str, text: str, target: Target) -> AaiError:
    """A DBus error reply as the gateway's error, with the app's own words kept in the detail."""
    if error_name in NOT_RUNNING:
        return AppNotRunning(
            f"{target.service} is not on the {target.bus} bus and could not be started; start the app and try again"
        )
    if error_name.startswith(SPAWN):
        return AppNotRunning(activation_failed(target.service, error_name, text))
    if error_name in DENIED:
        return PermissionDenied(f"the {target.bus} bus refused {target}: {text}")
    if error_name in TIMED_OUT:
        return Timeout(f"{target} timed out: {text}")
    if error_name == NO_REPLY:
        return AppNotRunning(f"{target.service} left the bus before answering {target.member}: {text}")
    return AutomationFailed(f"{target} failed with {error_name}: {text}")


def activation_failed(service: str, error_name: str, text: str) -> str:
    """What to do when the bus could not start `service`: its program died at once, or could not be run."""
    what = f"{service} could not be started by DBus activation ({text or error_name.removeprefix(SPAWN)})"
    if error_name in DIED:
        return (
            f"{what}: its program died at once. Run the Exec= line of its service file (the one with Name={service} "
            "under /usr/share/dbus-1/services) by hand to see why; a graphical program, such as "
            "a notification server, needs a display: on a machine without one, start it yourself under Xvfb on "
            "this bus (`xvfb-run -a <program> &`), or remove the app's descriptor"
        )
    return (
        f"{what}: check the service file under /usr/share/dbus-1/services that names {service} "
        "(is its program installed?), or remove the app's descriptor"
    )


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


def parse_envelope(body: list[Any], target: Target) -> Any:
    """`{status, result | error}` from an app's com.aai.Executor.Execute; its error keeps the app's code."""
    return envelope.response(body[0] if body else None, str(target))


class _PatientSocket:
    """A socket whose `send` sends nothing, rather than raising, when the socket's buffer is full.

    dbus-fast's writer sends the next message at once when its queue looks empty, even while the last
    one is still half written; with the buffer full that send raises EAGAIN, which it takes for a lost
    connection, failing every call in flight (several calls with megabytes of arguments at once are
    enough). Sending nothing instead leaves the rest to its wait for the socket to be writable."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def send(self, data: bytes | memoryview) -> int:
        try:
            return self._sock.send(data)
        except BlockingIOError:
            return 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def patient(bus: MessageBus) -> None:
    """Make `bus`'s writer wait out a full socket (see _PatientSocket); a dbus-fast without that writer
    is left as it is."""
    writer = getattr(bus, "_writer", None)
    sock = getattr(writer, "sock", None)
    if isinstance(sock, socket.socket):
        writer.sock = _PatientSocket(sock)  # type: ignore[union-attr]

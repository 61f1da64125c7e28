"""DBus signals as events: one match rule on the app's bus per event listened to, no polling.

The signal's arguments become the payload, named by the event's `fields` (else `{"args": [...]}`),
converted to JSON as the DBus executor converts results. A signal whose arguments outgrow the payload
bound is never converted: its waiters get a note saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aai_gateway.calls import Caller, Calls
from aai_gateway.descriptor import Descriptor, instances
from aai_gateway.descriptor.model import Event
from aai_gateway.errors import AutomationFailed, AutomationNotSupported
from aai_gateway.events.occurrence import MAX_PAYLOAD
from aai_gateway.events.source import Source

if TYPE_CHECKING:
    from dbus_fast import Message
    from dbus_fast.aio import MessageBus

    from aai_gateway.events.hub import Fanout

log = logging.getLogger(__name__)

DBUS = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")


def rule_of(app: Descriptor, event: Event) -> tuple[str, str, dict[str, str]]:
    """The bus, the match rule and its parts for `app`'s signal `event` (the app's service and object by
    default; no sender when the service is a pattern of several, such as org.mpris.MediaPlayer2.*)."""
    binding = next((b for b in app.bindings.values() if b.automation in ("dbus", "ipc")), None)
    if binding is None:
        raise AutomationNotSupported(f"{app.app_id} has no DBus binding, so its event {event.name} cannot be heard")
    signal, options = event.source, binding.options
    service = str(signal.get("service") or options.get("service") or app.app_id)
    parts = {"type": "signal", "interface": str(signal["interface"]), "member": str(signal["member"])}
    if not instances.is_pattern(service):
        parts["sender"] = service
    path = signal.get("object") or (
        None if instances.is_pattern(service) else options.get("object") or "/" + service.replace(".", "/")
    )
    if path:
        parts["path"] = str(path)
    if isinstance(signal.get("arg0"), str):
        parts["arg0"] = signal["arg0"]
    rule = ",".join(f"{key}='{_quoted(value)}'" for key, value in parts.items())
    return str(signal.get("bus") or options.get("bus") or "session"), rule, parts


def _quoted(value: str) -> str:
    return value.replace("'", "'\\''")


class SignalSource(Source):
    def __init__(self, calls: Calls, app: Descriptor, event: Event, fanout: Fanout, caller: Caller) -> None:
        super().__init__(calls, app, event, fanout, caller)
        self.kind, self.rule, self.parts = rule_of(app, event)
        fields = event.source.get("fields")
        self.fields: list[str] | None = [str(f) for f in fields] if isinstance(fields, list) else None
        self._bus: MessageBus | None = None

    async def start(self) -> None:
        from aai_gateway.executors.dbus import DbusExecutor  # noqa: PLC0415 (dbus-fast loads with the first DBus use)

        binding = next(b for b in self.app.bindings.values() if b.automation in ("dbus", "ipc"))
        executor = self.calls.servers.executor(binding)
        assert isinstance(executor, DbusExecutor)
        bus = await executor.bus(self.kind)
        bus.add_message_handler(self._handle)
        self._bus = bus
        try:
            await self._match(bus, "AddMatch")
        except BaseException:
            bus.remove_message_handler(self._handle)
            self._bus = None
            raise
        log.info("listening for %s on the %s bus: %s", self.event.name, self.kind, self.rule)

    async def stop(self) -> None:
        bus, self._bus = self._bus, None
        if bus is None:
            return
        bus.remove_message_handler(self._handle)
        if bus.connected:
            try:
                await self._match(bus, "RemoveMatch")
            except AutomationFailed as exc:
                log.debug("%s", exc)
        log.info("stopped listening for %s of %s", self.event.name, self.app.app_id)

    async def _match(self, bus: MessageBus, member: str) -> None:
        from dbus_fast import Message, MessageType  # noqa: PLC0415

        destination, path, interface = DBUS
        message = Message(
            destination=destination, path=path, interface=interface, member=member, signature="s", body=[self.rule]
        )
        reply = await bus.call(message)
        if reply is None or reply.message_type == MessageType.ERROR:
            why = reply.body[0] if reply is not None and reply.body else "no reply"
            raise AutomationFailed(f"the DBus {self.kind} bus refused the match rule {self.rule}: {why}")

    def _handle(self, message: Message) -> None:
        from dbus_fast import MessageType  # noqa: PLC0415

        parts = self.parts
        if (
            message.message_type != MessageType.SIGNAL
            or message.member != parts["member"]
            or message.interface != parts["interface"]
            or ("path" in parts and message.path != parts["path"])
            or ("arg0" in parts and (not message.body or message.body[0] != parts["arg0"]))
        ):
            return
        try:
            payload = self._payload(message.body)
        except Exception:  # one odd signal never stops the others
            log.exception("could not read the signal %s.%s", parts["interface"], parts["member"])
            return
        if payload is not None:
            self.fanout.deliver(payload)

    def _payload(self, body: list[Any]) -> Any:
        from aai_gateway.executors.dbus_types import from_dbus  # noqa: PLC0415

        size = _size(body, MAX_PAYLOAD)
        if size > MAX_PAYLOAD:
            return {"truncated": True, "note": f"the signal's arguments took more than {MAX_PAYLOAD} bytes: dropped"}
        values = [from_dbus(v) for v in body]
        payload: dict[str, Any]
        if self.fields is None:
            payload = {"args": values}
        else:
            payload = dict(zip(self.fields, values, strict=False))
            if len(values) > len(self.fields):
                payload["args"] = values[len(self.fields) :]
        if self.when is not None:
            try:
                if not self.when.search(payload):
                    return None
            except Exception as exc:
                log.debug("when of %s failed: %s", self.event.name, exc)
                return None
        return payload


def _size(value: Any, limit: int, depth: int = 0) -> int:
    """Roughly how many bytes `value` (DBus values) takes as JSON, counting no further than past `limit`."""
    if isinstance(value, str | bytes | bytearray):
        return len(value) * (4 if isinstance(value, bytes | bytearray) else 1) + 2
    if depth > 64:
        return limit + 1
    inner = getattr(value, "value", None) if type(value).__name__ == "Variant" else None
    if inner is not None:
        return _size(inner, limit, depth + 1)
    if isinstance(value, Mapping):
        items: list[Any] = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return 8
    total = 2
    for item in items:
        total += _size(item, limit, depth + 1) + 1
        if total > limit:
            return total
    return total

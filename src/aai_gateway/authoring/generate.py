"""An aai.json from a DBus service's introspection: one tool per method and per property access.

Pure functions over introspected objects (object path → `dbus_fast.introspection.Node`), so every
mapping rule is table-tested without a bus. Methods become tools named in snake_case after the
member; readable properties give `get_<prop>`, writable ones `set_<prop>`. Names that collide are
prefixed with the last segment of their interface, then numbered. The binding's object and interface
are those of the service's main interface (the one named like the bus name, else the one with the
most tools); tools elsewhere carry their own `object` and `interface`.

Standard interfaces (`org.freedesktop.DBus.*`) are skipped, an interface found on several objects is
described once (at its shallowest object), and a method taking a Unix file descriptor is left out,
since the gateway cannot pass one. Each is noted for the person running the generator.

This module needs dbus-fast (Linux); it is imported only where DBus is used, never by the package.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dbus_fast import SignatureTree, SignatureType
from dbus_fast.constants import PropertyAccess
from dbus_fast.introspection import Arg, Interface, Method, Node, Property

from aai_gateway.authoring.knowledge import Source
from aai_gateway.authoring.names import APP_ID, MAX_TOOL_NAME, app_id_for, snake
from aai_gateway.executors.dbus_types import INT_RANGES, TYPE_WORDS

STANDARD_PREFIX = "org.freedesktop.DBus."
DESCRIPTION_ANNOTATIONS = ("org.freedesktop.DBus.Description", "org.gtk.GDBus.DocString")
DEPRECATED = "org.freedesktop.DBus.Deprecated"
OBJECT_PATH_PATTERN = "^/([A-Za-z0-9_]+(/[A-Za-z0-9_]+)*)?$"
FORMATS = ("a", "c")
EMPTY_PARAMETERS: Mapping[str, Any] = {"type": "object", "properties": {}}

Kind = Literal["method", "get", "set"]


def is_standard(interface: str) -> bool:
    """org.freedesktop.DBus.Properties, Introspectable, Peer, ObjectManager and the like."""
    return interface.startswith(STANDARD_PREFIX)


def schema_for(signature: str | SignatureType) -> dict[str, Any]:
    """The JSON Schema of one complete DBus type."""
    sig = SignatureTree(signature).types[0] if isinstance(signature, str) else signature
    token = sig.token
    if token in INT_RANGES:
        low, high = INT_RANGES[token]
        return {"type": "integer", "minimum": low, "maximum": high}
    if token == "d":
        return {"type": "number"}
    if token == "b":
        return {"type": "boolean"}
    if token == "o":
        return {"type": "string", "pattern": OBJECT_PATH_PATTERN}
    if token in "sg":
        return {"type": "string"}
    if token == "h":
        return {"type": "integer", "description": "a Unix file descriptor"}
    if token == "v":
        return {}
    if token == "(":
        items = [schema_for(child) for child in sig.children]
        return {"type": "array", "items": items, "minItems": len(items), "maxItems": len(items)}
    if token == "a":
        child = sig.children[0]
        if child.token == "{":
            value = child.children[1]
            if value.token == "v":
                return {"type": "object"}
            return {"type": "object", "additionalProperties": schema_for(value)}
        return {"type": "array", "items": schema_for(child)}
    return {}


def type_words(signature: str) -> str:
    return TYPE_WORDS.get(signature, f"DBus type '{signature}'")


@dataclass(frozen=True, slots=True)
class Operation:
    """One tool to be: a method call or a property read or write on one object and interface."""

    path: str
    interface: str
    member: str
    kind: Kind
    description: str
    parameters: Mapping[str, Any]
    returns: Mapping[str, Any] | None = None
    source: Source = "mechanical"
    """Whether the description is the interface's own text (its annotations) or the plain sentence."""

    @property
    def base_name(self) -> str:
        return snake(self.member) if self.kind == "method" else f"{self.kind}_{snake(self.member)}"


@dataclass(frozen=True, slots=True)
class Generated:
    document: dict[str, Any]
    notes: tuple[str, ...] = field(default_factory=tuple)
    """What was left out and why, for the person running the generator."""
    sources: Mapping[str, Source] = field(default_factory=dict)
    """Tool name → where its description came from."""

    @property
    def app_id(self) -> str:
        doc = self.document
        return str(doc["appId"] if "appId" in doc else doc["app"]["id"])

    @property
    def tool_count(self) -> int:
        doc = self.document
        tools = doc["platforms"]["linux"]["tools"] if "platforms" in doc else doc["tools"]
        return len(tools)


def _annotated(annotations: Mapping[str, str]) -> str | None:
    for key in DESCRIPTION_ANNOTATIONS:
        text = annotations.get(key, "").strip()
        if text:
            return " ".join(text.split())
    return None


def _deprecated(annotations: Mapping[str, str]) -> str:
    return " (deprecated)" if annotations.get(DEPRECATED, "").lower() == "true" else ""


def _parameter_names(args: Sequence[Arg]) -> list[str]:
    names: list[str] = []
    for index, arg in enumerate(args):
        name = snake(arg.name) if arg.name else f"arg{index}"
        while name in names:
            name = f"{name}_{index}"
        names.append(name)
    return names


def method_operation(path: str, interface: Interface, method: Method) -> Operation:
    properties: dict[str, Any] = {}
    for name, arg in zip(_parameter_names(method.in_args), method.in_args, strict=True):
        schema = schema_for(arg.type)
        doc = _annotated(arg.annotations)
        properties[name] = {**schema, "description": doc} if doc else schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if properties:
        parameters["required"] = list(properties)
    outs = [schema_for(a.type) for a in method.out_args]
    returns: dict[str, Any] | None = None
    if len(outs) == 1:
        returns = outs[0]
    elif outs:
        returns = {"type": "array", "items": outs, "minItems": len(outs), "maxItems": len(outs)}
    documented = _annotated(method.annotations)
    description = documented or f"Calls the DBus method {interface.name}.{method.name}."
    return Operation(
        path=path,
        interface=interface.name,
        member=method.name,
        kind="method",
        description=description + _deprecated(method.annotations),
        parameters=parameters,
        returns=returns,
        source="interface" if documented else "mechanical",
    )


def property_operations(path: str, interface: Interface, prop: Property) -> list[Operation]:
    doc = _annotated(prop.annotations)
    what = f"the DBus property {interface.name}.{prop.name} ({type_words(prop.signature)})"
    deprecated = _deprecated(prop.annotations)
    source: Source = "interface" if doc else "mechanical"
    found = []
    if prop.access in (PropertyAccess.READ, PropertyAccess.READWRITE):
        description = f"Reads {prop.name}: {doc}" if doc else f"Reads {what}."
        found.append(
            Operation(
                path=path,
                interface=interface.name,
                member=prop.name,
                kind="get",
                description=description + deprecated,
                parameters=dict(EMPTY_PARAMETERS),
                returns=schema_for(prop.signature),
                source=source,
            )
        )
    if prop.access in (PropertyAccess.WRITE, PropertyAccess.READWRITE) and "h" not in prop.signature:
        name = snake(prop.name)
        description = f"Sets {prop.name}: {doc}" if doc else f"Sets {what}."
        found.append(
            Operation(
                path=path,
                interface=interface.name,
                member=prop.name,
                kind="set",
                description=description + deprecated,
                parameters={"type": "object", "properties": {name: schema_for(prop.signature)}, "required": [name]},
                source=source,
            )
        )
    return found


READING_METHOD = re.compile(r"^(Get|List|Is|Has|Query)(?![a-z])")
"""Method names that plainly only read: `GetAll`, `ListNames`, `IsRunning`, `HasOwner`, `QueryInfo` (not `Getaway`)."""


def annotations_for(op: Operation) -> dict[str, bool]:
    """What the interface itself says of a tool's effects: property reads and plainly reading methods are
    read-only, and writing a property twice has no further effect. Anything else is left to the author."""
    if op.kind == "get" or (op.kind == "method" and READING_METHOD.match(op.member)):
        return {"readOnlyHint": True}
    if op.kind == "set":
        return {"idempotentHint": True}
    return {}


def _depth(path: str) -> tuple[int, str]:
    return (0 if path == "/" else path.count("/"), path)


def operations(objects: Mapping[str, Node]) -> tuple[list[Operation], list[str]]:
    """Every operation of the service's own interfaces, shallowest object first, and notes on what was skipped."""
    found: list[Operation] = []
    notes: list[str] = []
    seen: dict[str, str] = {}
    again: Counter[str] = Counter()
    for path in sorted(objects, key=_depth):
        for interface in objects[path].interfaces:
            if is_standard(interface.name):
                continue
            if interface.name in seen:
                again[interface.name] += seen[interface.name] != path
                continue
            seen[interface.name] = path
            for method in interface.methods:
                if any("h" in arg.type.signature for arg in method.in_args):
                    notes.append(
                        f"{interface.name}.{method.name} is left out: it takes a Unix file descriptor (DBus 'h')"
                    )
                    continue
                found.append(method_operation(path, interface, method))
            for prop in interface.properties:
                found.extend(property_operations(path, interface, prop))
    notes.extend(
        f"{name} is also on {count} other object{'s' if count > 1 else ''}; it is described once, at {seen[name]}"
        for name, count in again.items()
        if count
    )
    return found, notes


def tool_names(ops: Sequence[Operation]) -> list[str]:
    """Unique snake_case names: those shared across interfaces prefixed with the interface's last segment,
    any still taken numbered (`_2`, `_3`), all cut to 64 characters."""
    interfaces: dict[str, set[str]] = {}
    for op in ops:
        interfaces.setdefault(op.base_name, set()).add(op.interface)
    wanted = [
        f"{snake(op.interface.rsplit('.', 1)[-1])}_{op.base_name}"
        if len(interfaces[op.base_name]) > 1
        else op.base_name
        for op in ops
    ]
    names: list[str] = []
    taken: set[str] = set()
    for name in wanted:
        unique = name[:MAX_TOOL_NAME]
        number = 1
        while unique in taken:
            number += 1
            suffix = f"_{number}"
            unique = name[: MAX_TOOL_NAME - len(suffix)] + suffix
        taken.add(unique)
        names.append(unique)
    return names


def main_interface(bus_name: str, ops: Sequence[Operation]) -> tuple[str, str] | None:
    """(object, interface) of the binding: the interface named like the bus name, else the one with most tools."""
    if not ops:
        return None
    for op in ops:
        if op.interface == bus_name:
            return op.path, op.interface
    counts = Counter((op.path, op.interface) for op in ops)
    return max(counts, key=lambda key: counts[key])


def _title(bus_name: str) -> str:
    return bus_name.rsplit(".", 1)[-1] or bus_name


def generate(
    bus_name: str,
    objects: Mapping[str, Node],
    *,
    fmt: str = "a",
    app_id: str | None = None,
    bus: str = "session",
) -> Generated:
    """The descriptor of `bus_name` in format A (multi-platform, `platforms.linux`) or C (camelCase, dbus).

    Raises ValueError for an invalid `app_id`, an unknown format, or a service with nothing to describe.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format '{fmt}': use one of {', '.join(FORMATS)}")
    app = app_id or app_id_for(bus_name)
    if not APP_ID.fullmatch(app):
        raise ValueError(f"app id '{app}' is not a lowercase reverse-DNS id such as com.example.mail")
    ops, notes = operations(objects)
    where = main_interface(bus_name, ops)
    if where is None:
        raise ValueError(
            f"{bus_name} offers no methods or properties outside the standard org.freedesktop.DBus interfaces"
        )
    path, interface = where
    interfaces = sorted({op.interface for op in ops})
    description = (
        f"Generated from the DBus introspection of {bus_name} on the {bus} bus (interfaces: {', '.join(interfaces)})."
    )
    names = tool_names(ops)
    tools = [_tool(op, name, path, interface, fmt) for op, name in zip(ops, names, strict=True)]
    sources = {name: op.source for op, name in zip(ops, names, strict=True)}
    binding: dict[str, Any] = {"service": bus_name}
    if fmt == "a":
        binding.update(object=path, interface=interface)
        if bus != "session":
            binding["bus"] = bus
        document: dict[str, Any] = {
            "schema_version": "1.0",
            "appId": app,
            "name": _title(bus_name),
            "description": description,
            "platforms": {"linux": {"automation": "dbus", **binding, "tools": tools}},
        }
    else:
        binding.update(objectPath=path, interface=interface)
        if bus != "session":
            binding["bus"] = bus
        document = {
            "schemaVersion": "1.0",
            "platform": "linux",
            "app": {"id": app, "name": _title(bus_name), "description": description},
            "execution": {"type": "dbus", **binding},
            "tools": tools,
        }
    return Generated(document, tuple(notes), sources)


def _tool(op: Operation, name: str, path: str, interface: str, fmt: str) -> dict[str, Any]:
    target: dict[str, Any] = {"method": op.member}
    if op.kind != "method":
        target = {"property": op.member, "access": op.kind}
    if op.path != path:
        target["object"] = op.path
    if op.interface != interface:
        target["interface"] = op.interface
    tool: dict[str, Any] = {"name": name, "description": op.description, "parameters": dict(op.parameters)}
    if op.returns is not None:
        tool["returns"] = dict(op.returns)
    if hints := annotations_for(op):
        tool["annotations"] = hints
    if fmt == "a":
        tool.update(target)
    else:
        tool["execution"] = target
    return tool

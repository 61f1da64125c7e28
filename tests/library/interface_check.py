"""Checks a descriptor's DBus bindings against interface XML: every interface, method (with its in-arguments'
signature against the parameters' types), property (readable for `get`, writable for `set`) and signal it uses.

The XML comes from the interface files a Debian package ships (`/usr/share/dbus-1/interfaces/*.xml`) and from
files committed under `tests/library/interfaces/`, each opening with a comment saying where it was recorded
or extracted. The descriptor is read by the gateway's own loader, so what is checked is what the gateway runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbus_fast import SignatureTree, SignatureType
from dbus_fast.errors import InvalidIntrospectionError
from dbus_fast.introspection import Node

from aai_gateway import templates
from aai_gateway.descriptor.model import Descriptor, Tool
from aai_gateway.descriptor.validate import load
from aai_gateway.executors.dbus import template_schema

HERE = Path(__file__).resolve().parent
RECORDED = HERE / "interfaces"
SHIPPED = Path("/usr/share/dbus-1/interfaces")
DBUS_AUTOMATIONS = ("dbus",)
INTEGERS = frozenset("ynqiuxt")
PROPERTIES = "org.freedesktop.DBus.Properties"
UNREADABLE = "(unreadable)"
DOCTYPE = re.compile(r"<!DOCTYPE[^\[>]*(?:\[(.*?)\])?\s*>", re.DOTALL)
ENTITY = re.compile(r'<!ENTITY\s+(\w+)\s+"([^"]*)"\s*>')


@dataclass(frozen=True, slots=True)
class Method:
    in_signature: str
    in_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Property:
    signature: str
    access: str


@dataclass(slots=True)
class Interface:
    name: str
    source: str
    methods: dict[str, Method] = field(default_factory=dict)
    properties: dict[str, Property] = field(default_factory=dict)
    signals: dict[str, str] = field(default_factory=dict)


def parse(xml: str, source: str) -> list[Interface]:
    """Every `<interface>` of an introspection document, read by the DBus library the gateway itself uses."""
    found = []
    for parsed in Node.parse(_entities_resolved(xml)).interfaces:
        interface = Interface(parsed.name, source)
        for method in parsed.methods:
            interface.methods[method.name] = Method(method.in_signature, tuple(a.name or "" for a in method.in_args))
        for prop in parsed.properties:
            interface.properties[prop.name] = Property(prop.signature, prop.access.value)
        for signal in parsed.signals:
            interface.signals[signal.name] = signal.signature
        found.append(interface)
    return found


def _entities_resolved(xml: str) -> str:
    """The document without its DOCTYPE, entities it declares written out: dbus-fast refuses a DOCTYPE with
    declarations, which upower and PackageKit ship only to name error strings in their documentation."""
    doctype = DOCTYPE.search(xml)
    if doctype is None:
        return xml
    entities = dict(ENTITY.findall(doctype.group(1) or ""))
    body = xml[: doctype.start()] + xml[doctype.end() :]
    return re.sub(r"&(\w+);", lambda ref: entities.get(ref.group(1), ref.group(0)), body)


def known_interfaces(folders: Iterable[Path] = (RECORDED, SHIPPED)) -> dict[str, Interface]:
    """Interfaces by name; the first folder that has one wins (committed recordings before installed files).

    A file the DBus library refuses (PackageKit's, say, declares entities in its DOCTYPE) is listed under
    the name UNREADABLE, so that a check that misses an interface can say which files it could not read."""
    known: dict[str, Interface] = {}
    unreadable: list[str] = []
    for folder in folders:
        for path in sorted(folder.glob("*.xml")) if folder.is_dir() else []:
            try:
                parsed = parse(path.read_text(encoding="utf-8"), str(path))
            except (ValueError, SyntaxError, InvalidIntrospectionError) as exc:
                unreadable.append(f"{path.name} ({exc})")
                continue
            for interface in parsed:
                known.setdefault(interface.name, interface)
    known[UNREADABLE] = Interface(UNREADABLE, "; ".join(unreadable))
    return known


def check_file(path: Path, known: Mapping[str, Interface]) -> list[str]:
    """Every mismatch of the descriptor at `path` with the interfaces, each naming the app, tool and difference."""
    loaded = load(path)
    if loaded.descriptor is None:
        return [f"{path}: the gateway does not load it: " + "; ".join(p.message for p in loaded.problems)]
    return check(loaded.descriptor, known)


def check(descriptor: Descriptor, known: Mapping[str, Interface]) -> list[str]:
    problems: list[str] = []
    for binding in descriptor.bindings.values():
        if binding.automation not in DBUS_AUTOMATIONS:
            continue
        for tool in binding.tools:
            options = {**binding.options, **tool.options}
            where = f"{descriptor.app_id} tool {tool.name}"
            name = str(options.get("interface") or options.get("service") or descriptor.app_id)
            interface = known.get(name)
            if interface is None:
                unread = known[UNREADABLE].source if UNREADABLE in known else ""
                problems.append(
                    f"{where}: interface {name} is in no interface XML that was searched"
                    + (f" (files that could not be read: {unread})" if unread else "")
                )
                continue
            problems.extend(f"{where}: {p}" for p in _tool_problems(tool, options, interface))
            problems.extend(f"{where}: {p}" for p in _properties_call_problems(options, interface, known))
    return problems


def _tool_problems(tool: Tool, options: Mapping[str, Any], interface: Interface) -> list[str]:
    if "signal" in options:
        signal = str(options["signal"])
        return [] if signal in interface.signals else [f"{interface.name} has no signal {signal} ({interface.source})"]
    if "property" in tool.options:
        return _property_problems(tool, options, interface)
    member = str(options.get("method") or tool.name)
    method = interface.methods.get(member)
    if method is None:
        offered = ", ".join(sorted(interface.methods)) or "none"
        return [f"{interface.name} has no method {member} ({interface.source}; it has: {offered})"]
    return _argument_problems(tool, options, member, method)


def _properties_call_problems(
    options: Mapping[str, Any], interface: Interface, known: Mapping[str, Interface]
) -> list[str]:
    """Properties.Get, GetAll and Set name an interface (and a property) in their arguments: both must exist."""
    given = options.get("args")
    if interface.name != PROPERTIES or not isinstance(given, list) or not given or not isinstance(given[0], str):
        return []
    if templates.PLACEHOLDER.search(given[0]):
        return []
    named = known.get(given[0])
    if named is None:
        return [
            f"{PROPERTIES}.{options.get('method')} names interface {given[0]}, which is in no interface XML searched"
        ]
    prop = given[1] if len(given) > 1 and isinstance(given[1], str) else None
    if prop is not None and not templates.PLACEHOLDER.search(prop) and prop not in named.properties:
        return [f"{given[0]} has no property {prop} ({named.source})"]
    return []


def _property_problems(tool: Tool, options: Mapping[str, Any], interface: Interface) -> list[str]:
    name = str(options["property"])
    prop = interface.properties.get(name)
    if prop is None:
        offered = ", ".join(sorted(interface.properties)) or "none"
        return [f"{interface.name} has no property {name} ({interface.source}; it has: {offered})"]
    access = str(options.get("access") or "get")
    needed = "read" if access == "get" else "write"
    if needed not in prop.access:
        return [f"property {name} is {prop.access} in {interface.source}, so the tool cannot {access} it"]
    if access == "get":
        return []
    props = _properties(tool)
    template = options.get("value", "${" + next(iter(props)) + "}" if len(props) == 1 else None)
    if template is None:
        return [f"sets property {name} but names no value (one parameter or a `value` template)"]
    [sig] = SignatureTree(prop.signature).types
    return _fits(template_schema(template, props), sig, f"the value of property {name}")


def _argument_problems(tool: Tool, options: Mapping[str, Any], member: str, method: Method) -> list[str]:
    props = _properties(tool)
    given = options.get("args")
    argument_templates = list(given) if isinstance(given, list) else ["${" + p + "}" for p in props]
    types = SignatureTree(method.in_signature).types
    if len(argument_templates) != len(types):
        return [
            f"{member} takes {len(types)} arguments (signature '{method.in_signature}', "
            f"{', '.join(method.in_names) or 'none'}) but the tool gives {len(argument_templates)}"
        ]
    problems: list[str] = []
    for index, (template, sig) in enumerate(zip(argument_templates, types, strict=True)):
        label = method.in_names[index] or f"argument {index + 1}"
        problems.extend(_fits(template_schema(template, props), sig, f"{member} argument {index + 1} ({label})"))
    return problems


def _properties(tool: Tool) -> dict[str, Any]:
    props = tool.parameters.get("properties", {})
    return dict(props) if isinstance(props, Mapping) else {}


ACCEPTED: Mapping[str, tuple[str, ...]] = {
    "d": ("number", "integer"),
    "b": ("boolean",),
    "s": ("string",),
    "o": ("string",),
    "g": ("string",),
    "(": ("array",),
}


def _fits(schema: Any, sig: SignatureType, what: str) -> list[str]:
    """Whether values of `schema` can be sent as DBus type `sig` (the executor's own conversion rules)."""
    if not isinstance(schema, Mapping):
        return []
    kind = schema.get("type")
    if kind is None or sig.token == "v":
        return []
    kinds = tuple(kind) if isinstance(kind, list) else (kind,)
    token = sig.token
    if token in INTEGERS:
        allowed: tuple[str, ...] = ("integer",)
    elif token == "a":
        child = sig.children[0]
        allowed = ("object",) if child.token == "{" else ("string", "array") if child.token == "y" else ("array",)
    else:
        allowed = ACCEPTED.get(token, ())
    wrong = [k for k in kinds if k not in allowed and k != "null"]
    if wrong:
        return [
            f"{what} is DBus '{sig.signature}' but the descriptor gives JSON {'/'.join(kinds)} "
            f"({json.dumps(dict(schema), ensure_ascii=False)[:120]})"
        ]
    if token == "a" and sig.children[0].token not in "{y" and isinstance(schema.get("items"), Mapping):
        return _fits(schema["items"], sig.children[0], f"{what}[]")
    if token == "(" and isinstance(schema.get("items"), list):
        parts = schema["items"]
        if len(parts) != len(sig.children):
            return [f"{what} is the DBus struct '{sig.signature}' of {len(sig.children)} fields; given {len(parts)}"]
        return [
            p for i, (s, c) in enumerate(zip(parts, sig.children, strict=True)) for p in _fits(s, c, f"{what}[{i}]")
        ]
    return []

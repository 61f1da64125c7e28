"""Checks a descriptor's DBus bindings against interface XML: every interface, method (with its in-arguments'
signature against the parameters' types), property (readable for `get`, writable for `set`) and signal it uses.

The XML comes from the interface files a Debian package ships (`/usr/share/dbus-1/interfaces/*.xml`) and from
files committed under `tests/library/interfaces/`, each opening with a comment saying where it was recorded
or extracted. The descriptor is read by the gateway's own loader, so what is checked is what the gateway runs.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbus_fast import SignatureTree, SignatureType

from aai_gateway.descriptor.model import Descriptor, Tool
from aai_gateway.descriptor.validate import load
from aai_gateway.executors.dbus import template_schema

HERE = Path(__file__).resolve().parent
RECORDED = HERE / "interfaces"
SHIPPED = Path("/usr/share/dbus-1/interfaces")
DBUS_AUTOMATIONS = ("dbus",)
INTEGERS = frozenset("ynqiuxt")


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
    """Every `<interface>` in an introspection document, at any depth of `<node>`s."""
    found = []
    for element in ET.fromstring(xml).iter("interface"):
        interface = Interface(element.attrib["name"], source)
        for method in element.findall("method"):
            ins = [a for a in method.findall("arg") if a.attrib.get("direction", "in") == "in"]
            interface.methods[method.attrib["name"]] = Method(
                "".join(a.attrib["type"] for a in ins), tuple(a.attrib.get("name", "") for a in ins)
            )
        for prop in element.findall("property"):
            interface.properties[prop.attrib["name"]] = Property(prop.attrib["type"], prop.attrib["access"])
        for signal in element.findall("signal"):
            interface.signals[signal.attrib["name"]] = "".join(a.attrib["type"] for a in signal.findall("arg"))
        found.append(interface)
    return found


def known_interfaces(folders: Iterable[Path] = (RECORDED, SHIPPED)) -> dict[str, Interface]:
    """Interfaces by name; the first folder that has one wins (committed recordings before installed files)."""
    known: dict[str, Interface] = {}
    for folder in folders:
        for path in sorted(folder.glob("*.xml")) if folder.is_dir() else []:
            for interface in parse(path.read_text(encoding="utf-8"), str(path)):
                known.setdefault(interface.name, interface)
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
                problems.append(f"{where}: interface {name} is in no interface XML that was searched")
                continue
            problems.extend(f"{where}: {p}" for p in _tool_problems(tool, options, interface))
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
        return [p for i, (s, c) in enumerate(zip(parts, sig.children, strict=True)) for p in _fits(s, c, f"{what}[{i}]")]
    return []

"""What the bundled library knows, applied to a generated descriptor before anything else.

A generated tool is recognised by its binding, never by its name: a DBus interface and method (or
property and access), an HTTP host, method and path shape, or an AppleScript bundle id and command.
When a library descriptor has a tool with the same binding, the generated tool takes that tool's
curated name, description, parameters (names, descriptions, defaults; DBus arguments are matched by
position, HTTP ones by where they travel, AppleScript ones by name), returns, annotations and
timeout; the binding itself (service, object, interface, member, endpoint, script) stays the generated
one. When the generated service is the library app's own (same bus name or presence pattern, host or
bundle id), its names, aliases and description are taken too.

Every tool's description is marked with where it came from (`SOURCES`), so the share of tools an
agent gets more than a mechanical sentence for can be measured.

`bundled()` reads `aai_gateway/library/apps/*/aai.json` with the descriptor loader; the library
package may later offer its own reader.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from aai_gateway.descriptor import Binding, Descriptor, Tool
from aai_gateway.descriptor.validate import check_document, load

Source = Literal["library", "interface", "mechanical", "model"]
SOURCES: tuple[Source, ...] = ("library", "interface", "mechanical", "model")
"""Where a tool's description came from: a curated library entry, the interface's own text (DBus
annotations, OpenAPI summaries, sdef descriptions), the generator's plain sentence, or the LLM pass."""

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
PATH_SLOT = re.compile(r"\$\{[^}]*\}|\{[^}]*\}")
COMMAND_WORDS = re.compile(r"^([A-Za-z][A-Za-z0-9_]*(?: [A-Za-z][A-Za-z0-9_]*)*)")
NOT_A_COMMAND = ("tell ", "end ", "set ", "repeat", "if ", "else", "--", "on ", "return")

Key = tuple[str, ...]


def bundled_folder() -> Path:
    """The folder of the bundled library's entries (one `<appId>/aai.json` each)."""
    return Path(str(files("aai_gateway.library").joinpath("apps")))


@dataclass(frozen=True, slots=True)
class Entry:
    descriptor: Descriptor
    bus_names: tuple[str, ...] = ()
    """The entry's `presence.busNames` (exact names or a trailing-`*` prefix)."""


def bundled(folder: Path | None = None) -> list[Entry]:
    """The library's entries that load without errors, sorted by appId."""
    root = folder or bundled_folder()
    found: list[Entry] = []
    for path in sorted(root.glob("*/aai.json")) if root.is_dir() else []:
        descriptor = load(path).descriptor
        if descriptor is None:
            continue
        names: tuple[str, ...] = ()
        try:
            entry = json.loads((path.parent / "entry.json").read_text("utf-8"))
            names = tuple(str(n) for n in entry["presence"]["busNames"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        found.append(Entry(descriptor, names))
    return found


def path_shape(base_url: str | None, endpoint: str) -> tuple[str, str]:
    """(host, path) of an endpoint under a base URL, each path parameter written `{}`."""
    base = urlsplit(base_url or "")
    path = base.path.rstrip("/") + "/" + endpoint.split("?", 1)[0].lstrip("/")
    return (base.hostname or "", PATH_SLOT.sub("{}", path).rstrip("/") or "/")


def command_of(script: str) -> str | None:
    """The AppleScript command a one-command script sends: `add note` of `tell …\\n\\tadd note "${t}"`."""
    for line in script.splitlines():
        text = line.strip()
        if not text or text.startswith(NOT_A_COMMAND):
            continue
        found = COMMAND_WORDS.match(text)
        return found.group(1) if found else None
    return None


def key_of(binding: Binding, tool: Tool) -> Key | None:
    """What a tool does, independent of its name; None when it cannot be recognised."""
    options = tool.options
    if binding.platform == "linux" and ("method" in options or "property" in options):
        interface = str(options.get("interface") or binding.options.get("interface") or "")
        if "method" in options:
            return ("dbus", interface, "method", str(options["method"]))
        return ("dbus", interface, str(options.get("access") or "get"), str(options["property"]))
    if "endpoint" in options:
        host, path = path_shape(binding.options.get("base_url"), str(options["endpoint"]))
        return ("http", host, str(options.get("method") or "GET").upper(), path)
    if binding.platform == "macos" and isinstance(options.get("script"), str):
        command = command_of(options["script"])
        bundle = str(binding.options.get("bundle_id") or "")
        return ("applescript", bundle, command) if command else None
    return None


@dataclass(frozen=True, slots=True)
class Known:
    entry: Entry
    binding: Binding
    tool: Tool


def index(entries: Iterable[Entry]) -> dict[Key, Known]:
    """Binding key → the library tool with that binding (the first entry, by appId, wins)."""
    found: dict[Key, Known] = {}
    for entry in entries:
        for binding in entry.descriptor.bindings.values():
            for tool in binding.tools:
                key = key_of(binding, tool)
                if key is not None:
                    found.setdefault(key, Known(entry, binding, tool))
    return found


@dataclass
class Applied:
    document: dict[str, Any]
    sources: dict[str, Source]
    """Tool name → where its description came from."""
    app: str | None = None
    """The library entry whose app names were taken, if any."""
    notes: list[str] = field(default_factory=list)


def sections(document: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], list[dict[str, Any]]]]:
    """(platform, binding section, its own tool list) of a document: format A's platforms, format C's execution."""
    if "platforms" in document:
        for platform, section in document["platforms"].items():
            yield platform, section, section.get("tools", [])
    else:
        yield str(document["platform"]), document.get("execution", {}), document["tools"]


def _single(template: Any) -> str | None:
    if isinstance(template, str):
        found = PLACEHOLDER.fullmatch(template)
        return found.group(1) if found else None
    return None


def _dbus_parameters(raw: dict[str, Any], known: Tool) -> dict[str, Any] | None:
    """The library tool's parameters in the generated tool's argument order, or None when they do not line up."""
    theirs: Mapping[str, Any] = known.parameters.get("properties", {})
    given = known.options.get("args")
    order = [_single(t) for t in given] if isinstance(given, list) else list(theirs)
    ours = list(raw["parameters"].get("properties", {}))
    if len(order) != len(ours) or any(name is None or name not in theirs for name in order):
        return None
    names = [str(name) for name in order]
    parameters: dict[str, Any] = {"type": "object", "properties": {n: theirs[n] for n in names}}
    required = [n for n in known.parameters.get("required", []) if n in names]
    if required:
        parameters["required"] = required
    return parameters


def _slots(tool: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """Where each parameter of an HTTP tool travels → its name: path segment, query, header or body key."""
    slots: dict[tuple[str, str], str] = {}
    for index_, segment in enumerate(str(tool.get("endpoint", "")).split("?", 1)[0].strip("/").split("/")):
        if name := _single(segment):
            slots[("path", str(index_))] = name
    for where, key in (("query", "query_params"), ("header", "headers"), ("body", "body")):
        mapping = tool.get(key)
        if isinstance(mapping, Mapping):
            for field_, template in mapping.items():
                if name := _single(template):
                    slots[(where, str(field_).lower() if where == "header" else str(field_))] = name
    return slots


def _renamed(value: Any, names: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: "${" + names.get(m.group(1), m.group(1)) + "}", value)
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    return value


def _http_parameters(raw: dict[str, Any], known: Tool) -> None:
    """Give the generated HTTP tool the library's parameter names and schemas where both send the same slot."""
    theirs: Mapping[str, Any] = known.parameters.get("properties", {})
    library_slots = _slots(known.options)
    ours = raw["parameters"].get("properties", {})
    rename: dict[str, str] = {}
    for slot, name in _slots(raw).items():
        wanted = library_slots.get(slot)
        if wanted in theirs and name in ours:
            rename[name] = str(wanted)
    if len(set(rename.values())) != len(rename) or set(rename.values()) & (set(ours) - set(rename)):
        return  # the names would clash with a parameter the library does not know
    properties = {rename.get(n, n): (theirs[rename[n]] if n in rename else s) for n, s in ours.items()}
    parameters = {**raw["parameters"], "properties": properties}
    if "required" in parameters:
        parameters["required"] = [rename.get(n, n) for n in parameters["required"]]
    raw["parameters"] = parameters
    for key in ("endpoint", "query_params", "headers", "body"):
        if key in raw:
            raw[key] = _renamed(raw[key], rename)


def _script_parameters(raw: dict[str, Any], known: Tool) -> None:
    """Descriptions of same-named parameters; the schemas stay, since they decide how the script converts."""
    theirs: Mapping[str, Any] = known.parameters.get("properties", {})
    for name, schema in raw["parameters"].get("properties", {}).items():
        text = theirs.get(name, {}).get("description")
        if isinstance(text, str) and text:
            schema["description"] = text


def take(raw: dict[str, Any], known: Tool, kind: str) -> None:
    """The curated parts of `known` into the generated tool `raw` (its binding is left as it is)."""
    raw["description"] = known.description
    if kind == "dbus":
        parameters = _dbus_parameters(raw, known)
        if parameters is not None:
            raw["parameters"] = parameters
    elif kind == "http":
        _http_parameters(raw, known)
    else:
        _script_parameters(raw, known)
    if known.returns is not None and ("returns" in raw or kind != "applescript"):
        raw["returns"] = dict(known.returns)
    if hints := known.annotations.to_json():
        raw["annotations"] = hints
    if known.timeout is not None:
        raw["timeout"] = known.timeout


def _owned_by(entry: Entry, generated: Descriptor) -> bool:
    """Whether the generated descriptor drives the library entry's own app (not only a shared interface)."""
    for platform, binding in generated.bindings.items():
        theirs = entry.descriptor.bindings.get(platform)
        if theirs is None:
            continue
        if platform == "linux":
            service = str(binding.options.get("service") or "")
            patterns = (*entry.bus_names, str(theirs.options.get("service") or ""))
            if any(p == service or (p.endswith("*") and service.startswith(p[:-1])) for p in patterns if p):
                return True
        elif platform == "macos":
            if binding.options.get("bundle_id") and binding.options.get("bundle_id") == theirs.options.get("bundle_id"):
                return True
        elif (
            urlsplit(str(binding.options.get("base_url") or "")).hostname
            == urlsplit(str(theirs.options.get("base_url") or "")).hostname
        ):
            return True
    return False


def _take_app(document: dict[str, Any], app: Descriptor) -> None:
    names = app.names
    if "app" in document:
        section = document["app"]
        if all(n.lang for n in names):
            section["name"] = {str(n.lang): n.text for n in names}
            section["defaultLang"] = str(names[0].lang)
        else:
            section["name"] = "|".join(n.text for n in names)
        if app.description:
            section["description"] = app.description
        if app.aliases:
            section["aliases"] = list(app.aliases)
        return
    document["name"] = "|".join(n.text for n in names)
    if app.description:
        document["description"] = app.description
    if app.aliases:
        document["aliases"] = list(app.aliases)


def apply(document: dict[str, Any], sources: Mapping[str, Source], entries: Sequence[Entry]) -> Applied:
    """`document` with the library's knowledge taken in, and each tool's (possibly new) name → source.

    `sources` says where the generator found each tool's description; `document` is changed in place.
    """
    result = Applied(document, dict(sources))
    if not entries:
        return result
    loaded = check_document(document, "generated").descriptor
    if loaded is None:
        return result
    known = index(entries)
    raw_tools = {platform: tools for platform, _, tools in sections(document)}
    taken = {str(t["name"]) for tools in raw_tools.values() for t in tools}
    used: dict[str, int] = {}
    for platform, binding in loaded.bindings.items():
        for tool, raw in zip(binding.tools, raw_tools.get(platform, []), strict=False):
            key = key_of(binding, tool)
            match = known.get(key) if key is not None else None
            if match is None:
                continue
            old = str(raw["name"])
            take(raw, match.tool, key[0] if key else "")
            new = match.tool.name
            if new != old and new in taken:
                result.notes.append(f"{old} keeps its name: the library's name {new} is another tool's here")
                new = old
            taken.discard(old)
            taken.add(new)
            raw["name"] = new
            result.sources.pop(old, None)
            result.sources[new] = "library"
            app_id = match.entry.descriptor.app_id
            used[app_id] = used.get(app_id, 0) + 1
    owners = [e for e in entries if e.descriptor.app_id in used and _owned_by(e, loaded)]
    # Several entries may drive one service (a standard interface and the app's own): the one that
    # described the most tools names the app.
    owner = max(owners, key=lambda e: used[e.descriptor.app_id], default=None)
    if owner is not None:
        _take_app(document, owner.descriptor)
        result.app = owner.descriptor.app_id
    for app_id, count in used.items():
        result.notes.append(f"{count} tool{'s' if count > 1 else ''} described by the library entry {app_id}")
    return result


def summary(sources: Mapping[str, Source]) -> str:
    """`descriptions: 4 from the library, 2 from the interface, 10 mechanical`."""
    counts = {s: sum(1 for v in sources.values() if v == s) for s in SOURCES}
    words = {"library": "from the library", "interface": "from the interface", "mechanical": "mechanical"}
    words["model"] = "from the model"
    parts = [f"{counts[s]} {words[s]}" for s in SOURCES if counts[s] or s != "model"]
    return "descriptions: " + ", ".join(parts)

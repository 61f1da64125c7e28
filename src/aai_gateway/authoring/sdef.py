"""An aai.json for a scriptable macOS app from its scripting definition (sdef).

`parse` reads the sdef XML (no entity declarations, no includes followed, a size cap) into the
commands of its suites; `generate` writes a multi-platform descriptor with a `macos` section and one
AppleScript tool per command. Each script is a template in the app's own terminology whose
`${param}` placeholders the gateway binds from argv when it runs (never pasted as source):

    tell application id "com.example.jotter"
        add note "${text}" titled "${titled}" in notebook (notebook named "${in_notebook}")
    end tell

A fixed template cannot leave a parameter out, so optional parameters are not exposed (the tool's
description names them). A required parameter that cannot travel as data (a type, an object
specifier, a record) leaves its command out; hidden commands and suites are left out too. Each is
noted for the person running the generator.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from xml.parsers import expat

from aai_gateway.authoring.knowledge import Source
from aai_gateway.authoring.names import APP_ID, MAX_TOOL_NAME, app_id_for, snake

MAX_SDEF_BYTES = 8 * 1024 * 1024
XINCLUDE = ("{http://www.w3.org/2001/XInclude}", "{http://www.w3.org/2003/XInclude}")
TERM = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?: [A-Za-z0-9_]+)*")
"""Terminology the generator writes into a script: words of letters, digits and '_', one space apart."""
BUNDLE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*")
SAFE_NAME = re.compile(r"[^\"\\$\x00-\x1f\x7f]+")
TITLE_SUFFIX = re.compile(r"\s*(terminology|dictionary|scripting definitions?|scripting|suite)$", re.IGNORECASE)
DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})?$"
DATE_WORDS = "YYYY-MM-DDTHH:MM:SS, with Z or ±HH:MM for its zone (local time without one)"

Kind = Literal["text", "value", "file", "date", "class", "enum", "unbindable"]

BUILTIN: Mapping[str, tuple[Kind, Mapping[str, Any], str]] = {
    "text": ("text", {"type": "string"}, "text"),
    "string": ("text", {"type": "string"}, "text"),
    "unicode text": ("text", {"type": "string"}, "text"),
    "styled text": ("text", {"type": "string"}, "text"),
    "integer": ("value", {"type": "integer"}, "an integer"),
    "double integer": ("value", {"type": "integer"}, "an integer"),
    "real": ("value", {"type": "number"}, "a number"),
    "small real": ("value", {"type": "number"}, "a number"),
    "number": ("value", {"type": "number"}, "a number"),
    "boolean": ("value", {"type": "boolean"}, "a boolean"),
    "date": ("date", {"type": "string", "format": "date-time", "pattern": DATE_PATTERN}, "a date"),
    "file": ("file", {"type": "string"}, "a file"),
    "alias": ("file", {"type": "string"}, "a file"),
    "'file'": ("file", {"type": "string"}, "a file"),
    "file url": ("file", {"type": "string"}, "a file"),
    "file specification": ("file", {"type": "string"}, "a file"),
    "any": ("value", {}, "any value"),
    "list": ("value", {"type": "array"}, "a list"),
    "point": ("value", {"type": "array", "items": {"type": "number"}}, "a point"),
    "rectangle": ("value", {"type": "array", "items": {"type": "number"}}, "a rectangle"),
    "record": ("unbindable", {"type": "object"}, "a record, which AppleScript cannot build from data"),
    "type": ("unbindable", {"type": "string"}, "a type (a class name), which cannot be passed as data"),
    "specifier": ("unbindable", {"type": "string"}, "an object specifier, which cannot be passed as data"),
    "location specifier": ("unbindable", {"type": "string"}, "a location specifier, which cannot be passed as data"),
    "missing value": ("value", {"type": "null"}, "missing value"),
}

DATE_HANDLER = """\
on iso_date(iso_text)
\t-- YYYY-MM-DDTHH:MM:SS, with Z or +HH:MM/-HH:MM for its zone (local time without one)
\tset the_date to current date
\tset day of the_date to 1
\tset year of the_date to (text 1 thru 4 of iso_text) as integer
\tset month of the_date to (text 6 thru 7 of iso_text) as integer
\tset day of the_date to (text 9 thru 10 of iso_text) as integer
\tset the_hours to (text 12 thru 13 of iso_text) as integer
\tset the_minutes to (text 15 thru 16 of iso_text) as integer
\tset the_seconds to (text 18 thru 19 of iso_text) as integer
\tset time of the_date to the_hours * hours + the_minutes * minutes + the_seconds
\tif length of iso_text > 19 then
\t\tset zone_text to text 20 thru -1 of iso_text
\t\tset zone_seconds to 0
\t\tif zone_text is not "Z" then
\t\t\tset zone_hours to (text 2 thru 3 of zone_text) as integer
\t\t\tset zone_seconds to zone_hours * hours + ((text 5 thru 6 of zone_text) as integer) * minutes
\t\t\tif character 1 of zone_text is "-" then set zone_seconds to -zone_seconds
\t\tend if
\t\tset the_date to the_date - zone_seconds + (time to GMT)
\tend if
\treturn the_date
end iso_date
"""


class SdefError(ValueError):
    """An sdef that cannot be read: `file: line:col: what` where the XML says where."""


@dataclass(frozen=True, slots=True)
class TypeRef:
    name: str
    is_list: bool = False


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    """The parameter's terminology, e.g. `in notebook`; "" for the direct parameter."""
    types: tuple[TypeRef, ...]
    optional: bool = False
    description: str = ""
    hidden: bool = False


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    suite: str
    description: str = ""
    direct: Param | None = None
    params: tuple[Param, ...] = ()
    result: tuple[TypeRef, ...] = ()
    result_description: str = ""
    hidden: bool = False


@dataclass(frozen=True, slots=True)
class Dictionary:
    title: str
    suites: tuple[str, ...]
    commands: tuple[Command, ...]
    enumerations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    records: Mapping[str, Mapping[str, tuple[TypeRef, ...]]] = field(default_factory=dict)
    classes: frozenset[str] = frozenset()
    value_types: frozenset[str] = frozenset()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Generated:
    document: dict[str, Any]
    notes: tuple[str, ...] = ()
    """What was left out and why, for the person running the generator."""
    sources: Mapping[str, Source] = field(default_factory=dict)
    """Tool name → where its description came from (the sdef's description of the command, or none)."""

    @property
    def app_id(self) -> str:
        return str(self.document["appId"])

    @property
    def tool_count(self) -> int:
        return len(self.document["platforms"]["macos"]["tools"])


def is_source(text: str) -> bool:
    """Whether a --generate argument names an sdef file or an app bundle (a path, or a folder here, so
    that a bus name such as org.example.App stays a bus name)."""
    stripped = text.rstrip("/\\")
    if stripped.lower().endswith(".sdef"):
        return True
    return stripped.lower().endswith(".app") and ("/" in text or "\\" in text or Path(text).is_dir())


class _EntityRefused(Exception):
    pass


def parse(data: bytes, where: str) -> Dictionary:
    """The commands and types of an sdef document; raises SdefError naming `where`."""
    if len(data) > MAX_SDEF_BYTES:
        raise SdefError(f"{where}: is larger than {MAX_SDEF_BYTES} bytes")
    root = _tree(data, where)
    if root.tag != "dictionary":
        raise SdefError(f"{where}: the root element is <{root.tag}>, not an sdef's <dictionary>")
    return _Reader(where).dictionary(root)


def _tree(data: bytes, where: str) -> ET.Element:
    """The XML as elements (namespaced tags as `{uri}name`), built straight from expat so that an
    entity declaration is refused where it stands; external entities and DTDs are never loaded."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True

    def start(tag: str, attributes: dict[str, str]) -> None:
        builder.start(_qualified(tag), {_qualified(k): v for k, v in attributes.items()})

    def refuse(*_: Any) -> None:
        raise _EntityRefused

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda tag: builder.end(_qualified(tag))
    parser.CharacterDataHandler = builder.data
    parser.EntityDeclHandler = refuse
    try:
        parser.Parse(data, True)
    except _EntityRefused:
        at = f"{parser.CurrentLineNumber}:{parser.CurrentColumnNumber + 1}"
        raise SdefError(f"{where}: {at}: declares an XML entity, which an sdef may not do") from None
    except expat.ExpatError as exc:
        what = expat.ErrorString(exc.code) if exc.code is not None else str(exc)
        raise SdefError(f"{where}: {exc.lineno}:{exc.offset + 1}: not well-formed XML ({what})") from None
    return builder.close()


def _qualified(name: str) -> str:
    return "{" + name if "}" in name else name


def _yes(element: ET.Element, attribute: str) -> bool:
    return (element.get(attribute) or "").strip().lower() in ("yes", "true")


def _text(value: str | None) -> str:
    return " ".join((value or "").split())


def types_of(element: ET.Element) -> tuple[TypeRef, ...]:
    """`type="x"` (also the older `type="list of x"`) and each `<type type="x" list="yes"/>` child."""
    found: list[TypeRef] = []
    listed = [(element.get("type"), False)] + [(t.get("type"), _yes(t, "list")) for t in element.findall("type")]
    for raw, flagged in listed:
        name = _text(raw)
        if not name:
            continue
        older = name.lower().startswith("list of ")
        found.append(TypeRef(name[len("list of ") :].strip() if older else name, flagged or older))
    return tuple(found)


class _Reader:
    def __init__(self, where: str) -> None:
        self.where = where
        self.notes: list[str] = []

    def dictionary(self, root: ET.Element) -> Dictionary:
        suites: list[str] = []
        commands: list[Command] = []
        for child in root:
            if child.tag.startswith(XINCLUDE):
                href = child.get("href") or "?"
                self.notes.append(f"{self.where} includes {href}, which is not followed: what it defines is left out")
            elif child.tag == "suite":
                suite = _text(child.get("name")) or "unnamed"
                suites.append(suite)
                hidden = _yes(child, "hidden")
                commands.extend(self.command(c, suite, hidden) for c in child.findall("command"))
        enumerations = {
            _text(e.get("name")): tuple(_text(n.get("name")) for n in e.iter("enumerator") if n.get("name"))
            for e in root.iter("enumeration")
            if e.get("name")
        }
        records = {
            _text(r.get("name")): {_text(p.get("name")): types_of(p) for p in r.iter("property") if p.get("name")}
            for r in root.iter("record-type")
            if r.get("name")
        }
        classes = {_text(c.get(key)) for c in root.iter("class") for key in ("name", "plural") if c.get(key)}
        classes.update(_text(c.get("extends")) for c in root.iter("class-extension") if c.get("extends"))
        value_types = {_text(v.get("name")) for v in root.iter("value-type") if v.get("name")}
        return Dictionary(
            title=_text(root.get("title")),
            suites=tuple(suites),
            commands=tuple(commands),
            enumerations=enumerations,
            records=records,
            classes=frozenset(classes),
            value_types=frozenset(value_types),
            notes=tuple(self.notes),
        )

    def command(self, element: ET.Element, suite: str, suite_hidden: bool) -> Command:
        direct = element.find("direct-parameter")
        result = element.find("result")
        return Command(
            name=_text(element.get("name")),
            suite=suite,
            description=_text(element.get("description")),
            direct=self.param(direct) if direct is not None else None,
            params=tuple(self.param(p) for p in element.findall("parameter")),
            result=types_of(result) if result is not None else (),
            result_description=_text(result.get("description")) if result is not None else "",
            hidden=suite_hidden or _yes(element, "hidden"),
        )

    def param(self, element: ET.Element) -> Param:
        return Param(
            name=_text(element.get("name")),
            types=types_of(element),
            optional=_yes(element, "optional"),
            description=_text(element.get("description")),
            hidden=_yes(element, "hidden"),
        )


# --- generation -------------------------------------------------------------------------------


def app_name_from(title: str) -> str:
    """`Jotter Terminology` → `Jotter`."""
    return TITLE_SUFFIX.sub("", _text(title)).strip()


@dataclass(frozen=True, slots=True)
class Mapped:
    """How one sdef type travels: the JSON Schema of the value and how the script turns it into AppleScript."""

    kind: Kind
    schema: Mapping[str, Any]
    words: str
    term: str = ""
    """The class or enumeration whose terminology the script uses."""
    choices: tuple[str, ...] = ()
    is_list: bool = False


def map_type(ref: TypeRef, sdef: Dictionary) -> Mapped:
    """An sdef type as a parameter: JSON Schema and kind (see BUILTIN, plus the sdef's own types)."""
    item = _map_one(ref.name, sdef)
    if not ref.is_list:
        return item
    schema = {"type": "array", "items": dict(item.schema)}
    return Mapped(item.kind, schema, f"a list of {item.words}", item.term, item.choices, is_list=True)


def _map_one(name: str, sdef: Dictionary) -> Mapped:
    lowered = name.lower()
    if lowered in BUILTIN:
        kind, schema, words = BUILTIN[lowered]
        return Mapped(kind, schema, words)
    if name in sdef.enumerations:
        choices = sdef.enumerations[name]
        return Mapped("enum", {"type": "string", "enum": list(choices)}, f"one of: {', '.join(choices)}", name, choices)
    if name in sdef.records:
        return Mapped("unbindable", {"type": "object"}, f"a {name} record, which AppleScript cannot build from data")
    if name in sdef.classes:
        return Mapped("class", {"type": "string"}, f"the name of a {name}", name)
    return Mapped("value", {}, f"a {name}" if name in sdef.value_types else f"a value of type '{name}'")


def choose(types: tuple[TypeRef, ...], sdef: Dictionary) -> Mapped:
    """Of a parameter's types, the first that can travel as data (else the first); none → any value."""
    mapped = [map_type(t, sdef) for t in types]
    for candidate in mapped:
        if candidate.kind != "unbindable":
            return candidate
    return mapped[0] if mapped else Mapped("value", {}, "any value")


def returns_schema(types: tuple[TypeRef, ...], sdef: Dictionary, seen: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The JSON Schema of a command's result as the output parser gives it back."""
    if not types:
        return {}
    ref = types[0]
    item = _returns_one(ref.name, sdef, seen)
    return {"type": "array", "items": item} if ref.is_list else item


def _returns_one(name: str, sdef: Dictionary, seen: frozenset[str]) -> dict[str, Any]:
    lowered = name.lower()
    if name in sdef.records and name not in seen:
        properties = {snake(p): returns_schema(t, sdef, seen | {name}) for p, t in sdef.records[name].items()}
        return {"type": "object", "properties": properties}
    if name in sdef.enumerations:
        return {"type": "string", "enum": list(sdef.enumerations[name])}
    if lowered in ("date", "file", "alias", "'file'", "file url"):
        return {"type": "string", "description": f"the {lowered.strip(chr(39))} as AppleScript writes it"}
    if name in sdef.classes or lowered in ("specifier", "location specifier", "type"):
        return {"type": "string", "description": "a reference, as AppleScript writes it"}
    if lowered in BUILTIN:
        return dict(BUILTIN[lowered][1])
    return {}


def _record_result(types: tuple[TypeRef, ...], sdef: Dictionary) -> bool:
    """Results read with `result as record`: records and lists (their source form keeps the structure)."""
    return bool(types) and (types[0].is_list or types[0].name in sdef.records or types[0].name.lower() == "record")


@dataclass(frozen=True, slots=True)
class _Exposed:
    key: str
    term: str
    mapped: Mapped
    description: str


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _convert(mapped: Mapped, source: str, assign: str, indent: str) -> list[str]:
    """Lines that `assign` (e.g. `set x to`) the AppleScript value of text `source` for file, date, class, enum."""
    if mapped.kind == "file":
        return [f"{indent}{assign} {source} as POSIX file"]
    if mapped.kind == "date":
        return [f"{indent}{assign} my iso_date({source})"]
    if mapped.kind == "class":
        return [f"{indent}{assign} {mapped.term} named {source}"]
    lines = []
    for index, choice in enumerate(mapped.choices):
        lines.append(f"{indent}{'if' if index == 0 else 'else if'} {source} is {_literal(choice)} then")
        lines.append(f"{indent}\t{assign} {choice}")
    lines.append(f"{indent}end if")
    return lines


def _value(param: _Exposed) -> tuple[list[str], str]:
    """(setup lines, the expression written after the parameter's terminology)."""
    mapped, key = param.mapped, param.key
    if mapped.kind == "text" and not mapped.is_list:
        return [], f'"${{{key}}}"'
    if mapped.kind in ("text", "value"):
        return [], f"${{{key}}}"
    variable = f"{key}_value"
    if not mapped.is_list:
        return _convert(mapped, f'"${{{key}}}"', f"set {variable} to", "\t"), variable
    item = f"{key}_item"
    lines = [f"\tset {variable} to {{}}", f"\trepeat with {item} in ${{{key}}}"]
    lines.extend(_convert(mapped, f"((contents of {item}) as text)", f"set end of {variable} to", "\t\t"))
    lines.append("\tend repeat")
    return lines, variable


def _parameter_schema(param: _Exposed) -> dict[str, Any]:
    mapped = param.mapped
    schema = dict(mapped.schema)
    one = {"class": f"The name of a {mapped.term}.", "file": "A POSIX path.", "date": f"A date and time: {DATE_WORDS}."}
    many = {
        "class": f"Names of {mapped.term} objects.",
        "file": "POSIX paths.",
        "date": f"Dates and times: {DATE_WORDS}.",
    }
    words = (many if mapped.is_list else one).get(mapped.kind, "")
    description = " ".join(part for part in (param.description, words) if part)
    if description:
        schema["description"] = description
    return schema


class _Generator:
    def __init__(self, sdef: Dictionary, tell: str) -> None:
        self.sdef = sdef
        self.tell = tell
        self.notes: list[str] = list(sdef.notes)

    def tool(self, command: Command) -> dict[str, Any] | None:
        where = f"'{command.name}' ({command.suite})"
        if not TERM.fullmatch(command.name):
            self.notes.append(f"{where} is left out: its name is not terminology the generator can write")
            return None
        exposed: list[_Exposed] = []
        hidden: list[str] = []
        taken: set[str] = set()
        for param in ([command.direct] if command.direct else []) + list(command.params):
            label = f"parameter '{param.name}'" if param.name else "direct parameter"
            if param.optional or param.hidden:
                hidden.append(param.name or "the direct parameter")
                continue
            mapped = choose(param.types, self.sdef)
            if mapped.kind == "unbindable":
                self.notes.append(f"{where} is left out: its {label} is {mapped.words}")
                return None
            if (param.name and not TERM.fullmatch(param.name)) or not all(
                TERM.fullmatch(t) for t in (mapped.term, *mapped.choices) if t
            ):
                self.notes.append(f"{where} is left out: its {label} uses terminology the generator cannot write")
                return None
            key = _unique(snake(param.name) if param.name else "target", taken)
            exposed.append(_Exposed(key, param.name, mapped, param.description))
        setup: list[str] = []
        words = [command.name]
        for chosen in exposed:
            lines, expression = _value(chosen)
            setup.extend(lines)
            words.extend([chosen.term, expression] if chosen.term else [expression])
        body = "\n".join([*setup, "\t" + " ".join(words)])
        script = f"{self.tell}\n{body}\nend tell\n"
        if any(p.mapped.kind == "date" for p in exposed):
            script += "\n" + DATE_HANDLER
        description = command.description or f"The {command.name} command."
        suite = command.suite if command.suite.lower().endswith("suite") else f"{command.suite} suite"
        description = description.rstrip(".") + f". From the {suite}."
        if command.result_description:
            description += f" Returns {command.result_description[0].lower()}{command.result_description[1:]}"
            description = description.rstrip(".") + "."
        if hidden:
            description += f" Not exposed (optional in the sdef): {', '.join(hidden)}."
        parameters: dict[str, Any] = {
            "type": "object",
            "properties": {p.key: _parameter_schema(p) for p in exposed},
        }
        if exposed:
            parameters["required"] = [p.key for p in exposed]
        tool: dict[str, Any] = {
            "name": snake(command.name),
            "description": description,
            "parameters": parameters,
            "script": script,
            "output_parser": "result as record" if _record_result(command.result, self.sdef) else "result as text",
        }
        if command.result:
            tool["returns"] = returns_schema(command.result, self.sdef)
        return tool


def _unique(name: str, taken: set[str], limit: int = MAX_TOOL_NAME) -> str:
    if name.startswith("aai_"):
        name = "x_" + name  # aai_ names are the gateway's own in the scripts it runs
    unique, number = name[:limit], 1
    while unique in taken:
        number += 1
        suffix = f"_{number}"
        unique = name[: limit - len(suffix)] + suffix
    taken.add(unique)
    return unique


def generate(
    sdef: Dictionary,
    *,
    source: str,
    bundle_id: str | None = None,
    app_name: str | None = None,
    app_id: str | None = None,
    fmt: str = "a",
) -> Generated:
    """The multi-platform descriptor (`platforms.macos`, AppleScript) of the app `sdef` describes.

    Raises ValueError for `fmt` other than "a", an invalid `app_id`, or an sdef with nothing to run.
    """
    if fmt != "a":
        raise ValueError(
            "an sdef gives AppleScript templates, which only the multi-platform shape can hold; "
            "leave out --format c (or use --format a)"
        )
    notes: list[str] = []
    if bundle_id is not None and not BUNDLE_ID.fullmatch(bundle_id):
        notes.append(f"the bundle id {bundle_id!r} is not usable in a script; the app is addressed by name")
        bundle_id = None
    name = next((n for n in (app_name, app_name_from(sdef.title)) if n and SAFE_NAME.fullmatch(n)), None)
    if bundle_id is None and app_id is not None:
        bundle_id = app_id
    if bundle_id is not None:
        tell = f"tell application id {_literal(bundle_id)}"
    elif name is not None:
        tell = f"tell application {_literal(name)}"
        notes.append(f"no bundle id is known: the scripts address the app by its name '{name}' (--app-id sets one)")
    else:
        raise ValueError(f"{source} names no app (no bundle id, no usable title); pass --app-id")
    app = app_id or app_id_for(bundle_id or name or "")
    if not APP_ID.fullmatch(app):
        raise ValueError(f"app id '{app}' is not a lowercase reverse-DNS id such as com.example.mail")
    generator = _Generator(sdef, tell)
    tools: list[dict[str, Any]] = []
    described: list[bool] = []
    hidden = [c.name for c in sdef.commands if c.hidden]
    for command in sdef.commands:
        if not command.hidden:
            tool = generator.tool(command)
            if tool is not None:
                tools.append(tool)
                described.append(bool(command.description))
    taken: set[str] = set()
    sources: dict[str, Source] = {}
    for tool, documented in zip(tools, described, strict=True):
        tool["name"] = _unique(tool["name"], taken)
        sources[tool["name"]] = "interface" if documented else "mechanical"
    if hidden:
        notes.append(f"hidden commands are left out: {', '.join(hidden)}")
    if not tools:
        raise ValueError(f"{source} describes no command that can run with arguments passed as data")
    title = name or app
    suites = _listed(dict.fromkeys(c.suite for c in sdef.commands if not c.hidden))
    macos: dict[str, Any] = {"automation": "applescript"}
    if bundle_id is not None:
        macos["bundle_id"] = bundle_id
    macos["tools"] = tools
    document: dict[str, Any] = {
        "schema_version": "1.0",
        "appId": app,
        "name": title,
        "description": f"Generated from the scripting definition (sdef) of {title} (suites: {suites}).",
        "platforms": {"macos": macos},
    }
    return Generated(document, (*generator.notes, *notes), sources)


def _listed(names: Iterable[str]) -> str:
    return ", ".join(names) or "none"

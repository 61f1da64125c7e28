"""Reading and checking descriptor files; every problem names the file, a JSON pointer and what is wrong.

Nothing here raises for a bad file: `load` returns the problems, so one bad file never stops others.
"""

from __future__ import annotations

import errno
import hashlib
import inspect
import json
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator, SchemaError
from jsonschema.exceptions import best_match

from aai_gateway import __version__, problems
from aai_gateway.descriptor import instances
from aai_gateway.descriptor.event_checks import event_problems
from aai_gateway.descriptor.formats import detect, normalise
from aai_gateway.descriptor.mcp_checks import mcp_problems, override_problems
from aai_gateway.descriptor.model import Descriptor, Shape
from aai_gateway.descriptor.safe_schema import SAFE_META
from aai_gateway.descriptor.server_tools import refused_patterns
from aai_gateway.descriptor.tool_checks import dbus_problems, hint_problems, placeholder_problems, ref_problems
from aai_gateway.descriptor.undo_checks import undo_problems
from aai_gateway.descriptor.unknown_keys import unknown_keys
from aai_gateway.problems import Problem, describe, pointer, short

DEFAULT_MAX_BYTES = 1024 * 1024

SHAPE_NAMES: Mapping[Shape, str] = {
    "multi": "multi-platform (appId + platforms)",
    "single": "single-platform (schema_version + platform + app)",
    "camel": "camelCase (schemaVersion + platform + app)",
}


@dataclass(frozen=True, slots=True)
class Loaded:
    source: str
    descriptor: Descriptor | None
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return self.descriptor is not None


@cache
def validator(shape: Shape) -> Draft7Validator:
    text = files("aai_gateway.descriptor").joinpath(f"schemas/aai-{shape}.schema.json").read_text("utf-8")
    return Draft7Validator(json.loads(text))


def _schema(shape: Shape) -> Mapping[str, Any]:
    schema = validator(shape).schema
    assert isinstance(schema, Mapping)
    return schema


@cache
def rules_fingerprint() -> str:
    """Changes whenever the checks could give another verdict: the package version, the schemas, this module."""
    digest = hashlib.blake2b(__version__.encode(), digest_size=16)
    schemas = files("aai_gateway.descriptor").joinpath("schemas")
    for shape in ("multi", "single", "camel"):
        digest.update(schemas.joinpath(f"aai-{shape}.schema.json").read_bytes())
    checks = (unknown_keys, ref_problems, mcp_problems, instances, undo_problems, event_problems)
    for module in (__file__, problems.__file__, *(inspect.getfile(check) for check in checks)):
        digest.update(Path(module).read_bytes())
    return digest.hexdigest()


def load_checked(data: bytes, source: str, found: Sequence[Problem]) -> Loaded:
    """A descriptor whose exact bytes passed these checks before (with the warnings `found`): parse and
    normalise only. The caller vouches for the bytes (a content hash under the same `rules_fingerprint`)."""
    doc = json.loads(data.decode("utf-8-sig"))
    shape = detect(doc)
    assert shape is not None, source
    return Loaded(source, normalise(doc, shape, source), tuple(found))


def load(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Loaded:
    """Read, parse, check and normalise one descriptor file."""
    source = str(path)
    data, problem = read_bytes(path, max_bytes)
    if problem is not None:
        return Loaded(source, None, (problem,))
    assert data is not None
    return check_bytes(data, source)


def read_bytes(path: Path, max_bytes: int) -> tuple[bytes | None, Problem | None]:
    source = str(path)
    try:
        info = path.stat()
    except OSError as exc:
        return None, Problem(source, "", _os_reason(exc))
    if stat.S_ISDIR(info.st_mode):
        return None, Problem(source, "", "is a directory, expected a JSON file")
    if not stat.S_ISREG(info.st_mode):
        return None, Problem(source, "", "is not a regular file (a device, pipe or socket), so it is not read")
    if info.st_size > max_bytes:
        return None, Problem(source, "", f"is {_size(info.st_size)}, over the {_size(max_bytes)} limit")
    try:
        with path.open("rb") as handle:
            # As many bytes as the file holds, and one more to see it grew: asking for the limit itself
            # makes Python set aside that much for every file (25 µs a descriptor at the 1 MiB default).
            data = handle.read(info.st_size + 1)
            if len(data) > info.st_size:
                data += handle.read(max_bytes + 1 - len(data))
    except OSError as exc:
        return None, Problem(source, "", _os_reason(exc))
    if len(data) > max_bytes:
        return None, Problem(source, "", f"grew past the {_size(max_bytes)} limit while being read")
    return data, None


def check_bytes(data: bytes, source: str) -> Loaded:
    if not data.strip():
        return Loaded(source, None, (Problem(source, "", "is empty; expected a JSON object"),))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return Loaded(
            source,
            None,
            (
                Problem(
                    source,
                    "",
                    f"is not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line} (offset {exc.start})",
                ),
            ),
        )
    duplicates: dict[int, list[str]] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                duplicates.setdefault(id(seen), []).append(key)
            seen[key] = value
        return seen

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON value")

    try:
        doc = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except json.JSONDecodeError as exc:
        return Loaded(source, None, (Problem(source, "", _json_error(exc, text)),))
    except RecursionError:
        return Loaded(source, None, (Problem(source, "", "JSON is nested too deeply to read"),))
    except ValueError as exc:
        reason = str(exc) if "JSON value" in str(exc) else "a number has too many digits to read"
        return Loaded(source, None, (Problem(source, "", f"invalid JSON: {reason}"),))
    warnings = tuple(
        Problem(source, pointer(at), f"key '{key}' appears twice in one object; the last one is used", "warning")
        for at, keys in _objects_with(doc, duplicates)
        for key in keys
    )
    loaded = check_document(doc, source)
    return Loaded(loaded.source, loaded.descriptor, warnings + loaded.problems)


def _json_error(exc: json.JSONDecodeError, text: str) -> str:
    where = f"line {exc.lineno}, column {exc.colno}"
    if exc.pos >= len(text.rstrip()):
        return f"invalid JSON at {where}: the file ends before the JSON is complete (an object or array is not closed)"
    return f"invalid JSON at {where}: {exc.msg.removesuffix(' at')}"


def _objects_with(doc: Any, marked: Mapping[int, list[str]]) -> list[tuple[list[str | int], list[str]]]:
    """Where in `doc` the objects whose `id` is in `marked` are (JSON pointer parts)."""
    found: list[tuple[list[str | int], list[str]]] = []
    stack: list[tuple[list[str | int], Any]] = [([], doc)]
    while marked and stack:
        at, value = stack.pop()
        if isinstance(value, dict):
            if id(value) in marked:
                found.append((at, marked[id(value)]))
            stack.extend(([*at, k], v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend(([*at, i], v) for i, v in enumerate(value))
    return sorted(found, key=lambda item: [str(p) for p in item[0]])


def check_document(doc: Any, source: str) -> Loaded:
    """Check a parsed document against its shape's schema and the rules a schema cannot say."""
    if not isinstance(doc, dict):
        return Loaded(source, None, (Problem(source, "", f"must be a JSON object, got {_kind(doc)}"),))
    shape = detect(doc)
    if shape is None:
        message = (
            "is not an aai.json descriptor: expected 'appId' and 'platforms' (multi-platform), "
            "'schema_version', 'platform' and 'app' (single-platform), "
            "or 'schemaVersion', 'platform' and 'app' (camelCase)"
        )
        return Loaded(source, None, (Problem(source, "", message),))
    try:
        problems = list(
            dict.fromkeys(
                Problem(source, pointer(err.absolute_path), describe(err))
                for err in sorted(validator(shape).iter_errors(doc), key=_order)
            )
        )
        if not problems:
            problems = _semantic_problems(doc, shape, source)
        problems.extend(unknown_keys(doc, _schema(shape), shape, source))
    except RecursionError:
        problems = [Problem(source, "", "is nested too deeply to check")]
    except ValueError:
        problems = [Problem(source, "", "holds a number too large to check")]
    if any(p.severity == "error" for p in problems):
        return Loaded(source, None, tuple(problems))
    return Loaded(source, normalise(doc, shape, source), tuple(problems))


def _order(err: Any) -> tuple[list[str], str]:
    return [str(p) for p in err.absolute_path], err.message


def _tool_lists(doc: Mapping[str, Any], shape: Shape) -> list[tuple[list[str | int], str, list[Any], frozenset[str]]]:
    """Where each list of tools is, the automation its tools use, the list, and the arguments the binding adds
    to every tool (a DBus instance argument)."""
    if shape == "multi":
        return [
            (["platforms", p, "tools"], b["automation"], b.get("tools", []), _added(b))
            for p, b in doc["platforms"].items()
        ]
    execution = doc.get("execution") or {}
    return [(["tools"], str(execution.get("type")), doc.get("tools") or [], _added(execution))]


def _added(binding: Mapping[str, Any]) -> frozenset[str]:
    instance = binding.get("instance")
    argument = instance.get("argument") if isinstance(instance, Mapping) else None
    return frozenset({argument}) if isinstance(argument, str) else frozenset()


def _semantic_problems(doc: Mapping[str, Any], shape: Shape, source: str) -> list[Problem]:
    problems: list[Problem] = []
    for base, automation, tools, added in _tool_lists(doc, shape):
        seen: dict[str, int] = {}
        for index, tool in enumerate(tools):
            at = [*base, index]
            name = tool.get("name")
            if name in seen:
                problems.append(
                    Problem(
                        source,
                        pointer([*at, "name"]),
                        f"tool name '{name}' is already used by tool {seen[name]}",
                    )
                )
            else:
                seen[name] = index
            if automation == "mcp":  # adjusts a tool the server lists: its schema is the server's
                problems.extend(override_problems(tool, at, source))
                continue
            if not tool.get("description"):
                problems.append(
                    Problem(
                        source,
                        pointer(at),
                        f"tool '{name}' has no description; agents see only its name",
                        "warning",
                    )
                )
            key = "parameters" if "parameters" in tool or shape != "camel" else "inputSchema"
            problems.extend(_schema_problems(tool.get(key), [*at, key], source))
            problems.extend(ref_problems(tool.get(key), [*at, key], source))
            problems.extend(placeholder_problems(tool, automation, at, source))
            if automation == "dbus":
                problems.extend(dbus_problems(tool, at, source))
            if isinstance(tool.get("returns"), dict):
                problems.extend(_schema_problems(tool["returns"], [*at, "returns"], source, root_object=False))
            problems.extend(hint_problems(tool, at, source))
            problems.extend(undo_problems(tools, index, at, source, added))
    problems.extend(instances.problems(doc, shape, source))
    lists = _tool_lists(doc, shape)
    every_tool = [tool for *_, tools, _ in lists for tool in tools]
    served = all(automation != "mcp" for _, automation, _, _ in lists)
    problems.extend(event_problems(doc.get("events"), every_tool, source, tools_known=served, mcp_server=not served))
    name = doc["name"] if shape == "multi" else doc["app"]["name"]
    if isinstance(name, str) and not name.replace("|", "").strip():
        at = ["name"] if shape == "multi" else ["app", "name"]
        problems.append(Problem(source, pointer(at), "has no name between its | separators"))
    if shape != "multi":
        execution = doc.get("execution") or {}
        url = execution.get("base_url") or execution.get("baseUrl")
        kind = execution.get("type")
        if doc["platform"] == "web" and not url:
            at = ["execution"] if "execution" in doc else []
            problems.append(Problem(source, pointer(at), "a web descriptor needs execution.base_url"))
        if doc["platform"] != "web" and kind == "http":
            problems.append(Problem(source, pointer(["execution", "type"]), "type 'http' is only for platform 'web'"))
        if doc["platform"] == "mcp" or kind == "mcp":
            problems.extend(mcp_problems(doc, source))
    for at, url in _urls(doc, shape):
        if not isinstance(url, str):
            problems.append(Problem(source, pointer(at), f"must be a string URL, got {short(url)}"))
        elif not url.startswith(("https://", "http://")):
            problems.append(Problem(source, pointer(at), f"{short(url)} is not an http(s) URL"))
    return problems


def _urls(doc: Mapping[str, Any], shape: Shape) -> list[tuple[list[str | int], Any]]:
    if shape == "multi":
        web = doc["platforms"].get("web")
        return [(["platforms", "web", "base_url"], web["base_url"])] if web else []
    execution = doc.get("execution") or {}
    return [(["execution", k], v) for k, v in execution.items() if k in ("base_url", "baseUrl")]


def _schema_problems(schema: Any, at: list[str | int], source: str, *, root_object: bool = True) -> list[Problem]:
    try:
        _check_schema(schema)
    except SchemaError as exc:
        where = pointer([*at, *exc.absolute_path])
        return [Problem(source, where, f"is not a valid JSON Schema: {describe(exc)}")]
    except RecursionError:
        return [Problem(source, pointer(at), "is nested too deeply to check")]
    unrun = [
        Problem(source, pointer([*at, *where]), found.message, "warning")
        for where, found in (refused_patterns(schema) if isinstance(schema, Mapping) else [])
        if found.usable
    ]
    if root_object and schema.get("type", "object") != "object":
        return [
            Problem(
                source,
                pointer([*at, "type"]),
                f'{at[-1]} must describe an object (type "object"), not {short(schema.get("type"))}',
            ),
            *unrun,
        ]
    return unrun


_VALID_SCHEMAS: set[str] = set()
"""Tools' parameter schemas repeat across tools and apps: each distinct valid one is checked once."""


def _check_schema(schema: Any) -> None:
    try:
        text = json.dumps(schema, sort_keys=True)
    except (RecursionError, ValueError):
        text = None
    if text is not None and text in _VALID_SCHEMAS:
        return
    error = best_match(SAFE_META.iter_errors(schema))  # Draft7Validator.check_schema, its patterns read by RE2
    if error is not None:
        raise SchemaError.create_from(error)
    if text is not None and len(_VALID_SCHEMAS) < 4096:
        _VALID_SCHEMAS.add(text)


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
        type(value), "null"
    )


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} bytes"


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink loop and cannot be opened"
    if exc.errno == errno.ENOENT:
        return "is a dangling symlink" if exc.filename and Path(exc.filename).is_symlink() else "does not exist"
    if exc.errno == errno.EACCES:
        return "cannot be read: permission denied"
    if exc.errno == errno.EISDIR:
        return "is a directory, expected a JSON file"
    return f"cannot be read: {exc.strerror}"

"""The optional LLM pass of `--generate --llm`: better names and descriptions from an OpenAI-compatible model.

The model sees the generated tools (names, bindings for context, descriptions, parameter names and
descriptions, annotations) and answers one JSON object. Only names, descriptions, aliases, parameter
descriptions and annotations are ever taken from it; bindings (service, object, interface, method,
signature, endpoint, script, property) never are. The answer is refused as a whole, leaving the
deterministic descriptor and a warning that says why, when it is:

- slow (no answer within `llm.timeout` seconds), not HTTP 200, or larger than `MAX_ANSWER_BYTES`;
- malformed (not a chat completion, not JSON, or not of `ANSWER_SCHEMA`);
- hostile: it tries to set a binding field (`method`, `script`, `endpoint`, …), names a tool or
  parameter the descriptor does not have, renames a tool to an invalid name or one already taken, or
  weakens an annotation: a hint may move towards caution (not read-only, destructive, not idempotent,
  open world), never away from what the generated descriptor or the tool's HTTP method says.

Tools whose description came from the library keep it: they were written and checked by hand.
The request goes out under the address rules of web requests (`addresses.address_refusal`): plain
http only to a loopback address, never the unspecified or a multicast address, no redirects.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft7Validator

from aai_gateway.authoring.knowledge import Source, sections
from aai_gateway.config import LlmSettings, Settings
from aai_gateway.descriptor.validate import check_document
from aai_gateway.discovery.endpoint import EndpointFailed, post_json

MAX_ANSWER_BYTES = 512 * 1024
MAX_TEXT = 1000
NEW_NAME = r"^[a-z][a-z0-9_]{0,63}$(?!\n)"
HINT_KEYS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
BINDING_KEYS = frozenset(
    {
        "service",
        "object",
        "objectPath",
        "object_path",
        "interface",
        "method",
        "signature",
        "property",
        "access",
        "args",
        "value",
        "endpoint",
        "base_url",
        "baseUrl",
        "query_params",
        "headers",
        "body",
        "script",
        "output_parser",
        "execution",
        "bus",
        "bundle_id",
        "progid",
        "automation",
        "platform",
        "platforms",
        "auth",
    }
)
"""Fields that say what a tool runs: an answer that sets any of them is refused."""
CAUTIOUS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
"""The value of each hint that promises the least: the model may move a hint towards it, never away."""
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""HTTP methods that change something (RFC 9110 §9.2.1): never read-only, and DELETE is destructive."""

TEXT = {"type": "string", "minLength": 1, "maxLength": MAX_TEXT}
ANSWER_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["tools"],
    "properties": {
        "app": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 80},
                "description": TEXT,
                "aliases": {
                    "type": "array",
                    "maxItems": 20,
                    "items": {"type": "string", "minLength": 1, "maxLength": 60},
                },
            },
        },
        "tools": {
            "type": "array",
            "maxItems": 1000,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "newName": {"type": "string", "pattern": NEW_NAME},
                    "description": TEXT,
                    "parameters": {"type": "object", "additionalProperties": TEXT},
                    "annotations": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {key: {"type": "boolean"} for key in HINT_KEYS},
                    },
                },
            },
        },
    },
}

INSTRUCTIONS = """\
You improve an aai.json descriptor, which lets AI agents call a desktop or web app's automation \
interface. For each tool you are given its name, what it is bound to (for context only), its current \
description and its parameters. Write what an agent needs: a short snake_case name saying what the \
tool does, a description of what it does and what it returns, and a description of each parameter. \
Tools (and an app) marked "fixed" were written by hand: leave them out. Answer with one JSON object and nothing \
else, of this form (leave out what you would not change):
{"app": {"name": "...", "description": "...", "aliases": ["what a user would call the app"]},
 "tools": [{"name": "<current name>", "newName": "...", "description": "...",
            "parameters": {"<parameter name>": "<description>"},
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
                            "openWorldHint": false}}]}
Never add any other field: bindings (service, object, interface, method, endpoint, script) are not yours to change."""


class Refused(Exception):
    """Why the model's answer is not used; the deterministic descriptor stays."""


@dataclass
class Outcome:
    document: dict[str, Any]
    sources: dict[str, Source]
    warning: str | None = None
    """Why the answer was refused (the document is then unchanged); None when it was taken."""
    changed: list[str] = field(default_factory=list)
    """The tools (by their new names) whose text the model wrote."""


def _binding_of(section: Mapping[str, Any], tool: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("service", "object", "objectPath", "interface", "base_url", "bundle_id")
    found = {k: section[k] for k in keys if k in section}
    found.update({k: v for k, v in tool.get("execution", tool).items() if k in BINDING_KEYS and k != "script"})
    if "script" in tool:
        found["script"] = str(tool["script"])[:300]
    return found


def prompt_tools(document: Mapping[str, Any], sources: Mapping[str, Source]) -> list[dict[str, Any]]:
    """What the model is shown of each tool."""
    shown: list[dict[str, Any]] = []
    for _, section, tools in sections(document):
        for tool in tools:
            properties = tool.get("parameters", {}).get("properties", {})
            entry: dict[str, Any] = {
                "name": tool["name"],
                "binding": _binding_of(section, tool),
                "description": tool.get("description", ""),
                "parameters": {
                    name: {k: v for k, v in schema.items() if k in ("type", "description", "enum")}
                    for name, schema in properties.items()
                },
                "annotations": tool.get("annotations", {}),
            }
            if sources.get(tool["name"]) == "library":
                entry["fixed"] = True
            shown.append(entry)
    return shown


def app_of(document: Mapping[str, Any]) -> dict[str, Any]:
    app = document.get("app", document)
    return {k: app[k] for k in ("name", "description", "aliases") if k in app}


def request_body(
    llm: LlmSettings, document: Mapping[str, Any], sources: Mapping[str, Source], *, app_fixed: bool = False
) -> dict[str, Any]:
    """The `/chat/completions` request: the instructions, then the descriptor's app and tools as JSON."""
    app = app_of(document)
    if app_fixed:
        app["fixed"] = True
    shown = {"app": app, "tools": prompt_tools(document, sources)}
    return {
        "model": llm.model,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": json.dumps(shown, ensure_ascii=False)},
        ],
    }


def _hostile_keys(value: Any, where: str) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in BINDING_KEYS:
                yield f"{where}.{key}" if where else str(key)
            if key != "parameters":  # parameter names may be anything, e.g. a parameter called `body`
                yield from _hostile_keys(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _hostile_keys(item, f"{where}[{index}]")


FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def answer_of(completion: bytes) -> dict[str, Any]:
    """The model's JSON object from a chat completion; raises Refused naming what is wrong."""
    try:
        data = json.loads(completion)
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise Refused("the endpoint's reply is not a chat completion (choices[0].message.content)") from None
    if not isinstance(content, str):
        raise Refused("the model's message has no text content")
    fenced = FENCE.match(content)
    try:
        answer = json.loads(fenced.group(1) if fenced else content)
    except ValueError as exc:
        raise Refused(f"the model's answer is not JSON ({exc})") from None
    if not isinstance(answer, dict):
        raise Refused("the model's answer is not a JSON object")
    return answer


def check(answer: Mapping[str, Any], document: Mapping[str, Any], sources: Mapping[str, Source]) -> None:
    """Refuse an answer that sets a binding, does not fit the schema, or names or renames tools wrongly."""
    hostile = list(_hostile_keys(answer, ""))
    if hostile:
        raise Refused(f"the model's answer tries to set binding fields ({', '.join(hostile[:3])}), which it may not")
    errors = sorted(Draft7Validator(ANSWER_SCHEMA).iter_errors(answer), key=lambda e: list(e.absolute_path))
    if errors:
        error = errors[0]
        where = "/".join(str(p) for p in error.absolute_path) or "the answer"
        raise Refused(f"the model's answer does not fit the expected form: {where}: {error.message[:200]}")
    tools = {str(t["name"]): t for _, _, listed in sections(document) for t in listed}
    final = {name: name for name in tools}
    for item in answer["tools"]:
        name = item["name"]
        if name not in tools:
            raise Refused(f"the model's answer names a tool the descriptor does not have: {name[:80]!r}")
        if sources.get(name) == "library":
            continue
        unknown = set(item.get("parameters", {})) - set(tools[name].get("parameters", {}).get("properties", {}))
        if unknown:
            raise Refused(f"the model's answer describes parameters {name} does not have: {', '.join(sorted(unknown))}")
        weaker = _weakening(tools[name], item.get("annotations", {}))
        if weaker:
            raise Refused(f"the model's answer marks {name} {weaker}")
        if "newName" in item:
            if item["newName"].startswith("aai_"):
                raise Refused(f"the model's answer renames {name} to {item['newName']}; aai_ names are the gateway's")
            final[name] = item["newName"]
    clashes = [n for n in set(final.values()) if list(final.values()).count(n) > 1]
    if clashes:
        raise Refused(f"the model's answer gives several tools the name {sorted(clashes)[0]}")


def _weakening(tool: Mapping[str, Any], hints: Mapping[str, bool]) -> str | None:
    """What in `hints` promises more than the tool's HTTP method or its generated annotations do, if anything."""
    method = tool.get("execution", tool).get("method")
    method = method.upper() if isinstance(method, str) else ""
    given = tool.get("annotations", {})
    for key, value in hints.items():
        if value == CAUTIOUS[key]:
            continue
        if method in UNSAFE_METHODS and (key == "readOnlyHint" or (key == "destructiveHint" and method == "DELETE")):
            return f"{key} {str(value).lower()}, which its {method} method rules out"
        if key in given and given[key] != value:
            return f"{key} {str(value).lower()}, where the generated descriptor says {str(given[key]).lower()}"
    return None


def take(
    answer: Mapping[str, Any], document: dict[str, Any], sources: Mapping[str, Source], *, app_fixed: bool = False
) -> Outcome:
    """The checked answer's names and texts into `document` (changed in place); with `app_fixed` (the app's
    names came from the library) the app's name, description and aliases stay."""
    outcome = Outcome(document, dict(sources))
    by_name = {str(t["name"]): t for _, _, listed in sections(document) for t in listed}
    for item in answer["tools"]:
        tool = by_name[item["name"]]
        if outcome.sources.get(item["name"]) == "library":
            continue
        if "description" in item:
            tool["description"] = " ".join(item["description"].split())
        for param, text in item.get("parameters", {}).items():
            tool["parameters"]["properties"][param]["description"] = " ".join(text.split())
        if item.get("annotations"):
            tool["annotations"] = {**tool.get("annotations", {}), **item["annotations"]}
        old = str(tool["name"])
        new = str(item.get("newName", old))
        source = outcome.sources.pop(old, "mechanical")
        tool["name"] = new
        outcome.sources[new] = "model" if "description" in item else source
        outcome.changed.append(new)
    app = {} if app_fixed else answer.get("app") or {}
    target = document.get("app", document)
    for key in ("name", "description", "aliases"):
        if key in app:
            target[key] = " ".join(app[key].replace("|", " ").split()) if key == "name" else app[key]
    return outcome


async def ask(llm: LlmSettings, settings: Settings, body: Mapping[str, Any]) -> bytes:
    """POST the request to `<baseUrl>/chat/completions`; the reply's bytes, or Refused saying why not."""
    url = llm.base_url.rstrip("/") + "/chat/completions"
    try:
        return await post_json(url, settings, body, api_key=llm.api_key, timeout=llm.timeout, cap=MAX_ANSWER_BYTES)
    except EndpointFailed as failed:
        raise Refused(str(failed)) from None


async def improve(
    llm: LlmSettings,
    settings: Settings,
    document: dict[str, Any],
    sources: Mapping[str, Source],
    *,
    app_fixed: bool = False,
) -> Outcome:
    """A copy of the document with the model's names and texts, or the document itself with a warning saying why."""
    try:
        answer = answer_of(await ask(llm, settings, request_body(llm, document, sources, app_fixed=app_fixed)))
        check(answer, document, sources)
    except Refused as refused:
        return Outcome(document, dict(sources), warning=str(refused))
    except RecursionError:  # json.loads, or a walk over the answer, went deeper than Python's stack
        return Outcome(document, dict(sources), warning="the model's answer is nested too deeply to read")
    outcome = take(answer, copy.deepcopy(document), sources, app_fixed=app_fixed)
    errors = [p for p in check_document(outcome.document, "the model's version").problems if p.severity == "error"]
    if errors:
        return Outcome(document, dict(sources), warning=f"the model's version is not a valid descriptor: {errors[0]}")
    return outcome

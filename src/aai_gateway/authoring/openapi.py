"""An aai.json (shape A, platform web) from an OpenAPI 3 document: one tool per operation.

`generate` is pure (a parsed document in, a descriptor out), so every mapping rule is table-tested:

- **Names**: the operationId in snake_case, else the method and the path (`get_tasks_id`); names that
  collide are numbered.
- **Parameters**: path, query and header parameters, and the JSON request body: an object body's
  properties become top-level parameters, any other body becomes one `body` parameter (with a note:
  a `body` template is an object or an array, so it cannot send that value as the whole body). A property
  that clashes with a path, query or header parameter keeps the `body_` prefix.
- **Request**: `endpoint` with `${name}` for path parameters, `query_params` and `headers` mapping
  each parameter to `${name}`, and `body` mapping each property to `${name}`.
- **$ref** to `#/components/...` is inlined; a recursive reference becomes `{}` (any value).
- **base_url** is `servers[0].url` (server variables take their defaults), resolved against the
  document's own URL when relative; **auth** comes from the first usable security scheme.

`fetch` reads a document from an http(s) URL under the address rules of `addresses.address_refusal`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx2

from aai_gateway.authoring.knowledge import Source
from aai_gateway.authoring.names import APP_ID, MAX_TOOL_NAME, app_id_for, snake
from aai_gateway.config import Settings
from aai_gateway.discovery.endpoint import capped
from aai_gateway.discovery.sites import url_site
from aai_gateway.discovery.wellknown import check_scheme, resolve
from aai_gateway.errors import AaiJsonInvalid, ApiRequestFailed, InvalidParams

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
MAX_OPENAPI_BYTES = 16 * 1024 * 1024
RECURSIVE: Mapping[str, Any] = {}


@dataclass
class Generated:
    document: dict[str, Any]
    app_id: str
    tool_count: int
    notes: list[str] = field(default_factory=list)
    sources: dict[str, Source] = field(default_factory=dict)
    """Tool name → where its description came from (the operation's summary or description, or neither)."""


def is_source(text: str, exists: bool) -> bool:
    """Whether a --generate argument names an OpenAPI document (an existing file or an http(s) URL)."""
    return exists or re.match(r"^https?://", text, re.IGNORECASE) is not None


def tool_name(method: str, path: str, operation: Mapping[str, Any]) -> str:
    op_id = operation.get("operationId")
    if isinstance(op_id, str) and op_id.strip():
        return snake(op_id, MAX_TOOL_NAME)
    return snake(f"{method}_{path}", MAX_TOOL_NAME)


def resolve_refs(node: Any, root: Mapping[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """`node` with every local `$ref` inlined; a reference back into one being inlined becomes `{}`."""
    if isinstance(node, list):
        return [resolve_refs(item, root, seen) for item in node]
    if not isinstance(node, Mapping):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ref in seen or not ref.startswith("#/"):
            return dict(RECURSIVE)
        target: Any = root
        for part in ref[2:].split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or key not in target:
                return dict(RECURSIVE)
            target = target[key]
        return resolve_refs(target, root, (*seen, ref))
    return {k: resolve_refs(v, root, seen) for k, v in node.items()}


def _schema(param: Mapping[str, Any]) -> dict[str, Any]:
    schema = dict(param.get("schema") or {})
    if "description" in param and "description" not in schema:
        schema["description"] = param["description"]
    return schema


def _placeholder(name: str) -> str:
    return "${" + name + "}"


def _param_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    if not (base[0].isalpha() or base[0] == "_"):
        base = "_" + base
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}_{n}", n + 1
    taken.add(candidate)
    return candidate


def _body(
    method: str,
    path: str,
    operation: Mapping[str, Any],
    *,
    properties: dict[str, Any],
    required: list[str],
    taken: set[str],
    notes: list[str],
) -> Any:
    """Add the JSON request body's parameters; return its `body` template, or None."""
    content = (operation.get("requestBody") or {}).get("content") or {}
    media = next((m for m in content if m == "application/json" or m.endswith("+json")), None)
    if media is None:
        return None
    schema = (content[media] or {}).get("schema") or {}
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(schema, Mapping) and schema.get("type", "object") == "object" and isinstance(props, Mapping):
        body: dict[str, str] = {}
        wanted = set(schema.get("required") or [])
        for prop, prop_schema in props.items():
            key = _param_name(prop if prop not in taken else f"body_{prop}", taken)
            properties[key] = prop_schema
            body[prop] = _placeholder(key)
            if prop in wanted:
                required.append(key)
        return body
    key = _param_name("body", taken)
    properties[key] = schema
    notes.append(f"{method.upper()} {path}: its JSON body is not an object, which a body template cannot send")
    if operation["requestBody"].get("required"):
        required.append(key)
    return None


METHOD_HINTS: Mapping[str, Mapping[str, bool]] = {
    "get": {"readOnlyHint": True},
    "head": {"readOnlyHint": True},
    "options": {"readOnlyHint": True},
    "put": {"idempotentHint": True},
    "delete": {"destructiveHint": True, "idempotentHint": True},
}
"""What HTTP itself promises of a method (RFC 9110 §9.2): safe methods only read; PUT and DELETE are
idempotent; DELETE removes. POST and PATCH promise nothing, so they get no hints."""


def tool_for(
    method: str, path: str, operation: Mapping[str, Any], shared: list[Any], notes: list[str] | None = None
) -> dict[str, Any]:
    """One web tool for one (already $ref-resolved) operation; `shared` are the path item's parameters.

    A non-object JSON body becomes a `body` parameter without a `body` template (a template is an
    object or an array and cannot be the value itself); a note says so."""
    notes = notes if notes is not None else []
    by_key: dict[tuple[str, str], Mapping[str, Any]] = {}
    for param in [*shared, *(operation.get("parameters") or [])]:
        if isinstance(param, Mapping) and isinstance(param.get("name"), str):
            by_key[(str(param.get("in")), param["name"])] = param
    properties: dict[str, Any] = {}
    required: list[str] = []
    taken: set[str] = set()
    endpoint = path
    query: dict[str, str] = {}
    headers: dict[str, str] = {}
    for (where, name), param in by_key.items():
        if where not in ("path", "query", "header"):
            continue
        key = _param_name(name, taken)
        properties[key] = _schema(param)
        if where == "path" or param.get("required"):
            required.append(key)
        if where == "path":
            endpoint = endpoint.replace("{" + name + "}", _placeholder(key))
        elif where == "query":
            query[name] = _placeholder(key)
        else:
            headers[name] = _placeholder(key)
    body = _body(method, path, operation, properties=properties, required=required, taken=taken, notes=notes)
    description = operation.get("summary") or operation.get("description") or f"{method.upper()} {path}"
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    tool: dict[str, Any] = {
        "name": tool_name(method, path, operation),
        "description": " ".join(str(description).split()),
        "parameters": parameters,
        "endpoint": endpoint,
        "method": method.upper(),
    }
    if query:
        tool["query_params"] = query
    if headers:
        tool["headers"] = headers
    if body is not None:
        tool["body"] = body
    if hints := METHOD_HINTS.get(method.lower()):
        tool["annotations"] = dict(hints)
    return tool


def auth_for(spec: Mapping[str, Any], base_url: str | None) -> tuple[dict[str, Any] | None, list[str]]:
    """The descriptor's auth from the security schemes the document uses (else all it declares)."""
    schemes = ((spec.get("components") or {}).get("securitySchemes")) or {}
    used = [name for req in spec.get("security") or [] if isinstance(req, Mapping) for name in req]
    order = [n for n in dict.fromkeys([*used, *schemes]) if n in schemes]
    notes: list[str] = []
    for name in order:
        scheme = schemes[name]
        kind = scheme.get("type")
        if kind == "http" and str(scheme.get("scheme", "")).lower() == "bearer":
            return {"type": "bearer"}, notes
        if kind == "apiKey" and scheme.get("in") in ("header", "query") and scheme.get("name"):
            return {"type": "api_key", "key_name": scheme["name"], "key_placement": scheme["in"]}, notes
        code = ((scheme.get("flows") or {}).get("authorizationCode")) if kind == "oauth2" else None
        if isinstance(code, Mapping) and code.get("authorizationUrl") and code.get("tokenUrl"):
            base = base_url or ""
            return {
                "type": "oauth2",
                "auth_url": urljoin(base, code["authorizationUrl"]),
                "token_url": urljoin(base, code["tokenUrl"]),
                "scopes": list(code.get("scopes") or {}),
            }, notes
        notes.append(f"security scheme {name!r} ({kind}) has no aai.json equivalent and is left out")
    return None, notes


def base_url_for(spec: Mapping[str, Any], source_url: str | None) -> str | None:
    servers = spec.get("servers") or []
    server = servers[0] if servers and isinstance(servers[0], Mapping) else {}
    url = str(server.get("url") or "/")
    for var, value in (server.get("variables") or {}).items():
        url = url.replace("{" + var + "}", str((value or {}).get("default", "")))
    if source_url is not None:
        url = urljoin(source_url, url)
    return url.rstrip("/") if urlsplit(url).scheme in ("http", "https") else None


def generate(spec: Mapping[str, Any], *, source_url: str | None = None, app_id: str | None = None) -> Generated:
    """The descriptor for an OpenAPI 3 document; ValueError when it is not one or the appId is invalid."""
    version = spec.get("openapi")
    if not isinstance(version, str) or not version.startswith("3."):
        raise ValueError('not an OpenAPI 3 document (no "openapi": "3.x" field)')
    info = spec.get("info") or {}
    title = str(info.get("title") or "API")
    base_url = base_url_for(spec, source_url)
    notes: list[str] = []
    if base_url is None:
        notes.append("servers[0].url is missing or relative: set platforms.web.base_url yourself")
    host = urlsplit(base_url).hostname if base_url else None
    reverse_dns = ".".join(reversed(host.split("."))) if host else ""  # api.example.com → com.example.api
    chosen = app_id or app_id_for(reverse_dns, title, unnamed="api")
    if not APP_ID.fullmatch(chosen):
        raise ValueError(f"{chosen!r} is not a valid appId (lowercase reverse-DNS like com.example.api); use --app-id")
    tools: list[dict[str, Any]] = []
    names: set[str] = set()
    sources: dict[str, Source] = {}
    for path, raw in (spec.get("paths") or {}).items():
        item = resolve_refs(raw, spec)
        if not isinstance(item, Mapping):
            continue
        shared = list(item.get("parameters") or [])
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, Mapping):
                continue
            tool = tool_for(method, str(path), operation, shared, notes)
            base, n = tool["name"], 2
            while tool["name"] in names or not TOOL_NAME.fullmatch(tool["name"]):
                suffix = f"_{n}"
                tool["name"], n = base[: MAX_TOOL_NAME - len(suffix)] + suffix, n + 1
            names.add(tool["name"])
            tools.append(tool)
            documented = operation.get("summary") or operation.get("description")
            sources[tool["name"]] = "interface" if documented else "mechanical"
    auth, auth_notes = auth_for(resolve_refs(spec, spec), base_url)
    notes.extend(auth_notes)
    web: dict[str, Any] = {"automation": "restapi", "base_url": base_url or "https://example.invalid"}
    if auth is not None:
        web["auth"] = auth
    web["default_headers"] = {"Accept": "application/json"}
    web["tools"] = tools
    document: dict[str, Any] = {"schema_version": "1.0", "appId": chosen, "name": title}
    if info.get("description"):
        document["description"] = " ".join(str(info["description"]).split())
    if info.get("version"):
        document["version"] = str(info["version"])
    document["platforms"] = {"web": web}
    return Generated(document, chosen, len(tools), notes, sources)


def parse(data: bytes, where: str) -> Mapping[str, Any]:
    try:
        spec = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise AaiJsonInvalid(f"{where} is not JSON (only JSON OpenAPI documents are read): {exc}") from None
    if not isinstance(spec, Mapping):
        raise AaiJsonInvalid(f"{where} is not a JSON object")
    return spec


async def fetch(url: str, settings: Settings, cap: int = MAX_OPENAPI_BYTES) -> bytes:
    """GET an OpenAPI document: https (plain http only to loopback with web.allowHttpLoopback), the
    addresses checked like web:discover's, no redirects, `cap` bytes at most, web.timeout seconds."""
    site = url_site(url)
    if site is None:
        raise InvalidParams(f"{url!r} is not an http(s) URL")
    check_scheme(site, settings)
    try:
        async with asyncio.timeout(settings.web_timeout):
            await resolve(site, settings)
            async with (
                httpx2.AsyncClient(follow_redirects=False, timeout=settings.web_timeout, trust_env=False) as client,
                client.stream("GET", url, headers={"Accept": "application/json"}) as response,
            ):
                if not 200 <= response.status_code < 300:
                    raise ApiRequestFailed(f"{url} answered HTTP {response.status_code}")
                data = await capped(response, cap)
                if data is None:
                    raise AaiJsonInvalid(f"{url} is larger than {cap} bytes")
                return data
    except (TimeoutError, httpx2.TimeoutException):
        raise ApiRequestFailed(f"{url} did not answer within {settings.web_timeout:g} s (web.timeout)") from None
    except httpx2.HTTPError as exc:
        raise ApiRequestFailed(f"{url} failed: {exc or type(exc).__name__}") from None

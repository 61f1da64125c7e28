"""An HTTP request from a web tool and its arguments: pure functions, no I/O.

Shape A (`restapi`) describes each part with `${x}` templates: `endpoint`, `query_params`, `body`,
`headers`, beside the binding's `default_headers`. A value that is exactly `"${x}"` keeps the
argument's JSON type, and a key whose argument is absent (with no schema default) is dropped.
Shapes B and C (`http`) give a `path` whose `{x}` or `${x}` placeholders consume arguments; the rest
go to a JSON body for POST, PUT and PATCH and to the query otherwise.

Arguments never change the request's shape. A path value is percent-encoded whole, so `/`, `?`, `#`
in it cannot start a segment, a query or a fragment, and a value holding a `.` or `..` segment (also
percent-encoded, at any depth) is refused. Header values with line breaks or control characters are
refused. The finished path must stay under the base URL's path.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from aai_gateway import templates
from aai_gateway.descriptor import Binding, Tool
from aai_gateway.errors import AaiJsonInvalid, InvalidParams

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
DEFAULT_PORTS = {"http": 80, "https": 443}
PATH_PLACEHOLDER = re.compile(r"\$?\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
MAX_URL = 65536
"""The longest URL the HTTP client sends, in characters (httpx's own limit)."""
DOT_SEGMENTS = frozenset({".", ".."})


@dataclass(frozen=True, slots=True)
class Base:
    """A checked `base_url`: http(s), a host, no credentials, no query or fragment."""

    scheme: str
    host: str
    port: int | None
    path: str
    """Without a trailing slash; "" for the root."""

    @property
    def origin(self) -> str:
        """`scheme://host[:port]`, the port only when it is not the scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port is None or self.port == DEFAULT_PORTS[self.scheme] else f":{self.port}"
        return f"{self.scheme}://{host}{port}"

    @property
    def effective_port(self) -> int:
        return self.port or DEFAULT_PORTS[self.scheme]


@dataclass(frozen=True, slots=True)
class HttpRequest:
    method: str
    base: Base
    path: str
    """Percent-encoded, beginning with the base path."""
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: Any = None
    has_body: bool = False
    parser: str | None = None
    """The tool's `output_parser`, or None for the default (JSON when the body is JSON)."""
    used: frozenset[str] = field(default_factory=frozenset)

    @property
    def url(self) -> str:
        query = urlencode(self.query, quote_via=quote)
        return self.base.origin + self.path + (f"?{query}" if query else "")

    @property
    def content(self) -> bytes | None:
        return json.dumps(self.body, ensure_ascii=False).encode() if self.has_body else None

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def __str__(self) -> str:
        """Method and path only: the query may carry a key."""
        return f"{self.method} {self.path}"


def split_base(base_url: Any) -> Base:
    if not isinstance(base_url, str) or not base_url:
        raise AaiJsonInvalid("the web binding gives no base_url (baseUrl) to send requests to")
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError as exc:
        raise AaiJsonInvalid(f"base_url is not a valid URL: {exc}") from None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise AaiJsonInvalid("base_url must be an http or https URL with a host")
    if parts.username is not None or parts.password is not None:
        raise AaiJsonInvalid("base_url may not carry a user name or password; use the auth section")
    if parts.query or parts.fragment:
        raise AaiJsonInvalid("base_url may not have a query or a fragment")
    return Base(parts.scheme, parts.hostname.lower(), port, parts.path.rstrip("/"))


def build(binding: Binding, tool: Tool, args: Mapping[str, Any]) -> HttpRequest:
    """The request a call of `tool` with `args` (already checked against its schema) sends."""
    base = split_base(binding.options.get("base_url"))
    opts = tool.options
    values = _with_defaults(tool, args)
    method = _method(tool)
    header_templates = {**_mapping(binding.options.get("default_headers")), **_mapping(opts.get("headers"))}
    headers = render_headers(header_templates, values)
    body: Any = None
    has_body = False
    if binding.automation == "restapi" or "endpoint" in opts:
        path, query, used = render_path(str(opts.get("endpoint") or ""), values)
        query += query_items(_render_present(_mapping(opts.get("query_params")), values))
        in_url = used | templates.names(_mapping(opts.get("query_params")))
        if opts.get("body") is not None:
            body, has_body = _render_present(opts["body"], values), True
    else:
        if not isinstance(opts.get("path"), str):
            raise AaiJsonInvalid(f"tool {tool.name} gives no execution.path")
        path, query, used = render_path(opts["path"], values)
        in_url = set(used)
        used |= templates.names(header_templates)
        rest = {k: v for k, v in args.items() if k not in used}
        if method in BODY_METHODS:
            body, has_body = (rest, True) if rest else (None, False)
        else:
            query += query_items(rest)
            in_url |= set(rest)
    if has_body and not any(k.lower() == "content-type" for k, _ in headers):
        headers.append(("Content-Type", "application/json"))
    full = join(base.path, path)
    parser = opts.get("output_parser")
    request = HttpRequest(
        method=method,
        base=base,
        path=full,
        query=tuple(query),
        headers=tuple(headers),
        body=body,
        has_body=has_body,
        parser=str(parser) if parser is not None else None,
        used=frozenset(used),
    )
    size = len(request.url)
    if size > MAX_URL:
        named = _longest(values, in_url)
        raise InvalidParams(
            f"the URL would be {size} characters long, more than the {MAX_URL} a request may have{named}"
        )
    return request


def _longest(values: Mapping[str, Any], in_url: set[str]) -> str:
    """Which argument made a URL too long: of those in the URL, the one whose encoded text is longest."""
    sizes = {
        name: len(quote(scalar_text(value), safe=""))
        for name, value in values.items()
        if name in in_url and value is not None
    }
    if not sizes:
        return ""
    name = max(sizes, key=lambda n: sizes[n])
    return f"; argument '{name}' is {sizes[name]} characters long once encoded"


def render_path(template: str, values: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]], set[str]]:
    """The path with every placeholder encoded, the template's own query pairs, and the names used.

    A query written in the template (`/search?type=page&q=${q}`) keeps its pairs; a pair whose
    argument is absent is left out.
    """
    used: set[str] = set()

    def encoded(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise InvalidParams(f"argument '{name}' is needed by the URL path and has no default")
        used.add(name)
        return path_segment(name, values[name])

    path_template, _, query_template = template.partition("#")[0].partition("?")
    path = PATH_PLACEHOLDER.sub(encoded, path_template)
    query = []
    for key, value_template in parse_qsl(query_template, keep_blank_values=True):
        names = set(PATH_PLACEHOLDER.findall(value_template))
        if not names <= values.keys():
            continue
        used |= names
        query.append((key, PATH_PLACEHOLDER.sub(lambda m: scalar_text(values[m.group(1)]), value_template)))
    return path, query, used


def path_segment(name: str, value: Any) -> str:
    if isinstance(value, dict | list) or value is None:
        raise InvalidParams(f"argument '{name}' goes into the URL path and must be a string or a number")
    text = scalar_text(value)
    if not text:
        raise InvalidParams(f"argument '{name}' goes into the URL path and may not be empty")
    if _has_dot_segment(text):
        raise InvalidParams(f"argument '{name}' goes into the URL path and may not contain '.' or '..' segments")
    return quote(text, safe="")


def _has_dot_segment(text: str) -> bool:
    for _ in range(4):
        if any(part in DOT_SEGMENTS for part in re.split(r"[/\\]", text)):
            return True
        decoded = unquote(text)
        if decoded == text:
            return False
        text = decoded
    return True


def join(base_path: str, path: str) -> str:
    """`base_path` + `path`, which must not climb out of `base_path` once decoded and normalised."""
    relative = path.lstrip("/")
    full = f"{base_path}/{relative}" if relative else base_path or "/"
    if not inside(base_path, full):
        raise InvalidParams(f"the request path would leave the API's base path {base_path or '/'}")
    return full


def inside(base_path: str, path: str) -> bool:
    normal = posixpath.normpath("/" + unquote(path).lstrip("/"))
    root = base_path.rstrip("/")
    return not root or normal == root or normal.startswith(root + "/")


def query_items(values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Query pairs: null is left out, a list repeats its key, objects travel as JSON text."""
    items = []
    for key, value in values.items():
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                items.append((str(key), scalar_text(item)))
    return items


def render_headers(header_templates: Mapping[str, Any], values: Mapping[str, Any]) -> list[tuple[str, str]]:
    headers: dict[str, tuple[str, str]] = {}
    for name, value in _render_present(header_templates, values).items():
        if not HEADER_NAME.fullmatch(name):
            raise AaiJsonInvalid(f"'{name}' is not a valid HTTP header name")
        if value is None:
            continue
        text = scalar_text(value)
        if CONTROL.search(text):
            raise InvalidParams(f"header {name}: a value may not contain line breaks or control characters")
        if text.strip(" \t") != text:  # whitespace around a value is not part of it (RFC 9110 5.5)
            text = text.strip(" \t")
            if not text:
                raise InvalidParams(
                    f"header {name}{_from(header_templates.get(name))}: a value may not be only whitespace"
                )
        headers[name.lower()] = (name, text)
    return list(headers.values())


def _from(template: Any) -> str:
    found = sorted(templates.names(template))
    return f" (from argument '{found[0]}')" if len(found) == 1 else ""


def scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _render_present(template: Any, values: Mapping[str, Any]) -> Any:
    """Render `template`; an object key or list item whose argument is absent is left out."""
    if isinstance(template, Mapping):
        out = {}
        for key, item in template.items():
            try:
                out[key] = _render_present(item, values)
            except templates.Missing:
                continue
        return out
    if isinstance(template, list):
        kept = []
        for item in template:
            try:
                kept.append(_render_present(item, values))
            except templates.Missing:
                continue
        return kept
    return templates.render(template, values)


def _with_defaults(tool: Tool, args: Mapping[str, Any]) -> dict[str, Any]:
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    values = {name: spec["default"] for name, spec in props.items() if isinstance(spec, Mapping) and "default" in spec}
    values.update(args)
    return values


def _method(tool: Tool) -> str:
    method = str(tool.options.get("method") or "GET").upper()
    if method not in METHODS:
        raise AaiJsonInvalid(f"tool {tool.name}: method '{method}' is not one of {', '.join(METHODS)}")
    return method


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}

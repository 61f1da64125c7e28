"""The MCP server lists other clients keep: where each client keeps them and how to read one.

Claude Desktop, Claude Code and Cursor keep `mcpServers` in JSON; VS Code keeps `servers` (with
`type`, `inputs` and `${input:…}`); Codex keeps `[mcp_servers.<name>]` tables in TOML. Every entry
comes out as a `Server` whose values are `Value`s: literal text and references to environment
variables or VS Code inputs, which the importer turns into `{"$env": …}` references. Reading never
fails as a whole because of one entry: a bad entry is a `Problem` and the others still come out.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aai_gateway import paths

CLIENTS = {
    "claude-desktop": "Claude Desktop",
    "claude-code": "Claude Code",
    "cursor": "Cursor",
    "vscode": "VS Code",
    "codex": "Codex",
}
"""The clients whose server lists can be imported, by the name `--from` takes."""

MAX_FILE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class EnvVar:
    """`${NAME}`, `${env:NAME}` or `${NAME:-default}` in a client's file, or a Codex `*_env_var` name."""

    name: str
    default: str | None = None


@dataclass(frozen=True)
class Input:
    """VS Code's `${input:id}`: a value the editor asks for, found nowhere in the file."""

    id: str


Part = str | EnvVar | Input
Value = tuple[Part, ...]
"""Literal text and references, in order: `Bearer ${TOKEN}` is `("Bearer ", EnvVar("TOKEN"))`."""


@dataclass(frozen=True)
class Source:
    """Where a server entry was found."""

    client: str
    file: Path
    name: str
    scope: str | None = None
    """The project of `~/.claude.json`'s `projects.<path>.mcpServers`; None for a file's own list."""

    def where(self) -> str:
        scope = f" (project {self.scope})" if self.scope else ""
        return f"{self.file}{scope}: server {self.name!r}"


@dataclass
class Server:
    """One server entry of a client, its values still as the client wrote them."""

    source: Source
    transport: str
    """`stdio`, `http` (streamable HTTP) or `sse`."""
    command: Value | None = None
    args: list[Value] = field(default_factory=list)
    env: dict[str, Value] = field(default_factory=dict)
    env_file: Value | None = None
    cwd: Value | None = None
    url: Value | None = None
    headers: dict[str, Value] = field(default_factory=dict)
    workspace: Path | None = None
    """The folder `${workspaceFolder}` stands for, when the file belongs to one."""
    secret_env: set[str] = field(default_factory=set)
    """Keys of `env` read from `envFile`: kept out of the client's file, so secret whatever they look like."""


@dataclass(frozen=True)
class Problem:
    """Something that could not be read: a whole file, or one entry of it."""

    where: str
    message: str
    deliberate: bool = False
    """Left out on purpose (a disabled entry), not a fault."""

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class Found:
    """What reading files gave: the servers, the entries left out on purpose, and the problems."""

    servers: list[Server] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: list[tuple[str, Path]] = field(default_factory=list)


class UnreadableFile(Exception):
    """A file that cannot be read or parsed, or whose format is not one of the clients'."""


def known_files(env: Mapping[str, str], cwd: Path, clients: Sequence[str] = tuple(CLIENTS)) -> list[tuple[str, Path]]:
    """The files each client keeps its servers in, on this host, that exist: user-wide ones, then the
    project files of `cwd`."""
    home = paths.home(env)
    host = paths.host_platform()
    if host == "macos":
        app_support = home / "Library" / "Application Support"
        desktop, vscode = app_support / "Claude", app_support / "Code" / "User"
    elif host == "windows":
        appdata = Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
        desktop, vscode = appdata / "Claude", appdata / "Code" / "User"
    else:
        config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
        desktop, vscode = config / "Claude", config / "Code" / "User"
    codex = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    candidates = {
        "claude-desktop": [desktop / "claude_desktop_config.json"],
        "claude-code": [home / ".claude.json", cwd / ".mcp.json"],
        "cursor": [home / ".cursor" / "mcp.json", cwd / ".cursor" / "mcp.json"],
        "vscode": [vscode / "mcp.json", cwd / ".vscode" / "mcp.json"],
        "codex": [codex / "config.toml", cwd / ".codex" / "config.toml"],
    }
    found: list[tuple[str, Path]] = []
    for client in clients:
        for path in candidates[client]:
            if path.is_file() and all(path.resolve() != seen.resolve() for _, seen in found):
                found.append((client, path))
    return found


def read(files: Sequence[tuple[str | None, Path]], env: Mapping[str, str]) -> Found:
    """Every server of every file; `None` as the client means: tell it from the file."""
    found = Found()
    for given, path in files:
        try:
            document = _load(path)
            client = given or _detect(path, document)
            found.files.append((client, path))
            for item in _entries(client, path, document):
                if isinstance(item, Server):
                    if item.env_file is None or _merge_env_file(item, env, found):
                        found.servers.append(item)
                else:
                    (found.skipped if item.deliberate else found.problems).append(item)
        except UnreadableFile as exc:
            found.problems.append(Problem(str(path), str(exc)))
        except RecursionError:  # a document nested deeper than the parsers (or the walk over it) go
            found.problems.append(Problem(str(path), "nested too deeply to read; not a client's server list"))
    return found


def _load(path: Path) -> Any:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise UnreadableFile(f"cannot read it: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise UnreadableFile(f"larger than {MAX_FILE_BYTES} bytes; not a client's server list")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"not UTF-8 text (byte {exc.start})") from None
    if path.suffix.lower() == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise UnreadableFile(f"invalid TOML: {exc}") from None
    try:
        return json.loads(_without_comments(text))
    except json.JSONDecodeError as exc:
        raise UnreadableFile(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # a number with more digits than Python converts
        raise UnreadableFile(f"invalid JSON: {exc}") from None


_JSONC = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.DOTALL)


def _without_comments(text: str) -> str:
    """VS Code and Cursor accept comments and trailing commas (JSONC); blank them, keeping positions."""

    def blank(match: re.Match[str]) -> str:
        token = match.group()
        return token if token.startswith('"') else re.sub(r"[^\n]", " ", token)

    return _JSONC.sub(blank, text)


def _detect(path: Path, document: Any) -> str:
    """The client a file belongs to, from its name, its folder and what it holds."""
    if not isinstance(document, dict):
        raise UnreadableFile("unknown format: expected a JSON object with mcpServers or servers, or Codex TOML")
    parts = [p.lower() for p in path.parts]
    if path.suffix.lower() == ".toml":
        if "mcp_servers" in document:
            return "codex"
        raise UnreadableFile("unknown format: a TOML file without [mcp_servers.<name>] tables (Codex config.toml)")
    older = document.get("mcp")  # VS Code's settings.json kept them under "mcp" before mcp.json
    if ("servers" in document and "mcpServers" not in document) or (isinstance(older, dict) and "servers" in older):
        return "vscode"
    if "mcpServers" in document or "projects" in document:
        if path.name == "claude_desktop_config.json":
            return "claude-desktop"
        if ".cursor" in parts[:-1]:
            return "cursor"
        return "claude-code"
    raise UnreadableFile(
        "unknown format: no mcpServers (Claude Desktop, Claude Code, Cursor), servers (VS Code) "
        "or [mcp_servers] (Codex); give --from CLIENT if it is one of them"
    )


def _entries(client: str, path: Path, document: Any) -> Iterator[Server | Problem]:
    if not isinstance(document, dict):
        raise UnreadableFile(f"expected an object at the top, found {_kind(document)}")
    if client == "codex":
        yield from _codex(path, document)
        return
    key = "servers" if client == "vscode" else "mcpServers"
    if client == "vscode" and key not in document and isinstance(document.get("mcp"), dict):
        document = document["mcp"]  # the older form inside settings.json
    lists: list[tuple[str | None, Any]] = [(None, document.get(key))]
    if client == "claude-code" and isinstance(document.get("projects"), dict):
        lists += [(str(project), value.get("mcpServers")) for project, value in document["projects"].items()
                  if isinstance(value, dict)]  # fmt: skip
    workspace = _workspace(client, path)
    inputs = {str(i.get("id")) for i in document.get("inputs", []) if isinstance(i, dict)}
    for scope, servers in lists:
        if servers is None:
            continue
        if not isinstance(servers, dict):
            yield Problem(
                f"{path}{f' (project {scope})' if scope else ''}", f"{key} is {_kind(servers)}, not an object"
            )
            continue
        for name, raw in servers.items():
            source = Source(client, path, str(name), scope)
            try:
                yield _json_server(source, raw, workspace, inputs)
            except EntryError as exc:
                yield Problem(source.where(), str(exc), isinstance(exc, Disabled))


class EntryError(Exception):
    """One server entry that cannot be imported, and why."""


class Disabled(EntryError):
    """An entry its client does not start."""


def _workspace(client: str, path: Path) -> Path | None:
    """The folder of a project file (`.vscode/mcp.json` → the folder holding `.vscode`)."""
    if path.parent.name in (".vscode", ".cursor"):
        return path.parent.parent
    if client == "claude-code" and path.name == ".mcp.json":
        return path.parent
    return None


def _json_server(source: Source, raw: Any, workspace: Path | None, inputs: set[str]) -> Server:
    if not isinstance(raw, dict):
        raise EntryError(f"expected an object, found {_kind(raw)}")
    if raw.get("disabled") is True or raw.get("enabled") is False:
        raise Disabled(f"disabled in {CLIENTS[source.client]}; not imported")
    kind = raw.get("type", raw.get("transport"))
    command, url = raw.get("command"), raw.get("url", raw.get("serverUrl"))
    if command is None and url is None:
        raise EntryError("has neither command nor url")
    if command is not None and url is not None:
        raise EntryError("has both command and url; keep one")
    if command is not None:
        if kind not in (None, "stdio"):
            raise EntryError(f"has a command but type {kind!r}; a command is a stdio server")
        transport = "stdio"
    elif kind in ("sse",) or (kind is None and _path_of(url).endswith("/sse")):
        transport = "sse"
    elif kind in (None, "http", "streamable-http", "streamableHttp", "streamable_http"):
        transport = "http"
    else:
        raise EntryError(f"unknown type {kind!r} (expected stdio, http or sse)")
    parse = _parser(source.client, inputs)
    server = Server(source, transport, workspace=workspace)
    if command is not None:
        server.command = parse(_text(command, "command"), "command")
        server.args = [
            parse(_text(a, f"args[{i}]"), f"args[{i}]") for i, a in enumerate(_list(raw.get("args"), "args"))
        ]
        server.env = {k: parse(_scalar(v, f"env.{k}"), f"env.{k}") for k, v in _object(raw.get("env"), "env").items()}
        if raw.get("envFile") is not None:
            server.env_file = parse(_text(raw["envFile"], "envFile"), "envFile")
        if raw.get("cwd") is not None:
            server.cwd = parse(_text(raw["cwd"], "cwd"), "cwd")
    else:
        server.url = parse(_text(url, "url"), "url")
        server.headers = {
            k: parse(_scalar(v, f"headers.{k}"), f"headers.{k}")
            for k, v in _object(raw.get("headers"), "headers").items()
        }
    return server


def _codex(path: Path, document: dict[str, Any]) -> Iterator[Server | Problem]:
    servers = document.get("mcp_servers", {})  # a config.toml without servers has none to import
    if not isinstance(servers, dict):
        raise UnreadableFile(f"mcp_servers is {_kind(servers)}, not a table")
    for name, raw in servers.items():
        source = Source("codex", path, str(name))
        try:
            yield _codex_server(source, raw)
        except EntryError as exc:
            yield Problem(source.where(), str(exc), isinstance(exc, Disabled))


def _codex_server(source: Source, raw: Any) -> Server:
    """Codex takes values as written (no `${…}`); variables are named in `env_vars`,
    `bearer_token_env_var` and `env_http_headers` instead."""
    if not isinstance(raw, dict):
        raise EntryError(f"expected a table, found {_kind(raw)}")
    if raw.get("enabled") is False:
        raise Disabled("disabled in Codex (enabled = false); not imported")
    command, url = raw.get("command"), raw.get("url")
    if command is None and url is None:
        raise EntryError("has neither command nor url")
    if command is not None and url is not None:
        raise EntryError("has both command and url; keep one")
    if command is not None:
        server = Server(source, "stdio", command=(_text(command, "command"),))
        server.args = [(_text(a, f"args[{i}]"),) for i, a in enumerate(_list(raw.get("args"), "args"))]
        server.env = {k: (_scalar(v, f"env.{k}"),) for k, v in _object(raw.get("env"), "env").items()}
        for i, item in enumerate(_list(raw.get("env_vars"), "env_vars", of=(str, dict))):
            name = item if isinstance(item, str) else item.get("name")
            if not isinstance(name, str) or not name:
                raise EntryError(f"env_vars[{i}] has no name")
            server.env.setdefault(name, (EnvVar(name),))
        if raw.get("cwd") is not None:
            server.cwd = (_text(raw["cwd"], "cwd"),)
        return server
    server = Server(source, "http", url=(_text(url, "url"),))
    server.headers = {
        k: (_scalar(v, f"http_headers.{k}"),) for k, v in _object(raw.get("http_headers"), "http_headers").items()
    }
    for header, variable in _object(raw.get("env_http_headers"), "env_http_headers").items():
        server.headers[header] = (EnvVar(_text(variable, f"env_http_headers.{header}")),)
    if raw.get("bearer_token_env_var") is not None:
        server.headers["Authorization"] = (
            "Bearer ",
            EnvVar(_text(raw["bearer_token_env_var"], "bearer_token_env_var")),
        )
    elif raw.get("bearer_token") is not None:  # older Codex releases took the token itself
        server.headers["Authorization"] = ("Bearer " + _text(raw["bearer_token"], "bearer_token"),)
    return server


_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PREDEFINED = frozenset({"userHome", "workspaceFolder", "workspaceFolderBasename", "pathSeparator", "/", "cwd"})
"""VS Code's and Cursor's own variables: not the environment's; the importer resolves those it can."""


def _parser(client: str, inputs: set[str]) -> Any:
    """A function turning a JSON client's string into a `Value`: `${VAR}` and `${VAR:-default}`
    (Claude Code), `${env:VAR}` and `${input:id}` (VS Code, Cursor); other `${…}` stay as written."""

    def parse(text: str, where: str) -> Value:
        parts: list[Part] = []
        end = 0
        for match in _REFERENCE.finditer(text):
            inner = match.group(1)
            part = _reference(inner, inputs, where)
            if part is None:
                continue
            parts.append(text[end : match.start()])
            parts.append(part)
            end = match.end()
        parts.append(text[end:])
        return tuple(p for p in parts if p != "")

    return parse


def _reference(inner: str, inputs: set[str], where: str) -> Part | None:
    if inner.startswith("env:") and _NAME.fullmatch(inner[4:]):
        return EnvVar(inner[4:])
    if inner.startswith("input:"):
        if inputs and inner[6:] not in inputs:
            raise EntryError(f"{where} uses ${{{inner}}}, which no entry of inputs defines")
        return Input(inner[6:])
    name, sep, default = inner.partition(":-")
    if _NAME.fullmatch(name) and name not in PREDEFINED:
        return EnvVar(name, default if sep else None)
    return None  # ${workspaceFolder}, ${userHome}, …: resolved by the importer


def _merge_env_file(server: Server, env: Mapping[str, str], found: Found) -> bool:
    """Read `envFile` (KEY=VALUE lines) into the server's env; its values count as secrets to the importer.
    False (and a problem) when it cannot be read."""
    assert server.env_file is not None
    text = "".join(p if isinstance(p, str) else "" for p in server.env_file)
    predefined = {"userHome": str(paths.home(env))}
    if server.workspace is not None:
        predefined["workspaceFolder"] = str(server.workspace)
    text = _REFERENCE.sub(lambda m: predefined.get(m.group(1), m.group()), text)
    if any(not isinstance(p, str) for p in server.env_file) or "${" in text:
        found.problems.append(
            Problem(server.source.where(), f"envFile {text!r} uses a variable the import cannot resolve")
        )
        return False
    path = paths.expand(text, env)
    if not path.is_absolute():
        path = (server.workspace or server.source.file.parent) / path
    try:
        lines = path.read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        found.problems.append(Problem(server.source.where(), f"cannot read its envFile {path}: {exc}"))
        return False
    from_file: dict[str, Value] = {}
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        from_file[key.strip()] = (value,)
    server.secret_env = set(from_file) - set(server.env)
    server.env = {**from_file, **server.env}
    server.env_file = None
    return True


def _path_of(url: Any) -> str:
    return str(url).split("?", 1)[0].rstrip("/") if isinstance(url, str) else ""


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise EntryError(f"{where} is {_kind(value)}, not a string")
    return value


def _scalar(value: Any, where: str) -> str:
    if isinstance(value, bool) or value is None or not isinstance(value, str | int | float):
        raise EntryError(f"{where} is {_kind(value)}, not a string")
    return str(value)


def _list(value: Any, where: str, of: tuple[type, ...] = (str,)) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise EntryError(f"{where} is {_kind(value)}, not a list")
    for i, item in enumerate(value):
        if not isinstance(item, of):
            raise EntryError(f"{where}[{i}] is {_kind(item)}")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise EntryError(f"{where} is {_kind(value)}, not an object")
    return {str(k): v for k, v in value.items()}

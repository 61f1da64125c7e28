"""`aai-gateway import`: one descriptor per MCP server another client runs, secrets moved out of it.

A server becomes `~/.aai/mcp.<name>/aai.json` with `execution.type` `mcp`. Values that look secret
(see secret_shapes.py: env and header values by key or shape, arguments such as `--token=…` or
`--header "Authorization: …"`, URLs holding a credential) never reach the file nor the output: they
become `{"$keyring": "<appId>|<name>"}` with the value stored in the OS keyring, or `{"$env": NAME}`
for the user to set, and are shown masked. References the client file already had (`${VAR}`, `${env:VAR}`, Codex's
`*_env_var`) become `{"$env": VAR}`. The same server found in several files is written once.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from aai_gateway import paths
from aai_gateway.authoring.mcp_clients import CLIENTS, EnvVar, Found, Input, Problem, Server, Source, Value
from aai_gateway.authoring.names import app_id_for
from aai_gateway.authoring.secret_shapes import MASK, Hidden, looks_secret, secret_arg, secret_url, token_shaped
from aai_gateway.errors import AaiError

DESCRIPTOR = "aai.json"
MAX_APP_ID = 255
ENTRY_NAME = "aai"
"""The name of the gateway's own entry in a client's list, as the README's client snippets have it."""


class Store(Protocol):
    """What the import needs of the gateway's secret store (auth.secrets.KeyringStore)."""

    name: str

    def get(self, key: str) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...


@dataclass(frozen=True)
class Moved:
    """A value kept out of a descriptor, and where it went instead."""

    place: str
    """`env.API_KEY` or `headers.Authorization`."""
    to: str
    """`keyring` (stored by the import) or `env` (to be set by the user)."""
    key: str
    """The keyring item, or the environment variable."""
    note: str
    value: str | None = field(default=None, repr=False)
    """The secret itself, for the keyring; never printed."""
    shown: str = ""
    """The value as the output shows it: masked, or the reference's `$NAME`."""


@dataclass
class Planned:
    """One descriptor the import writes, or would write."""

    app_id: str
    path: Path
    descriptor: dict[str, Any]
    sources: list[Source]
    moved: list[Moved]
    status: str = "new"
    """`new`, `unchanged`, `differs` (kept, needs --force), then after --write `written` or `overwritten`."""
    notes: list[str] = field(default_factory=list)
    backup: Path | None = None
    """Where the descriptor it replaced was kept."""


@dataclass
class Plan:
    servers: list[Planned]
    problems: list[Problem]
    skipped: list[Problem]
    files: list[tuple[str, Path]]
    secrets: str
    """`keyring` or `env`: where literal secrets go."""

    def variables(self) -> list[tuple[str, str]]:
        """Every environment variable the written descriptors read, with what it is for."""
        seen: dict[str, str] = {}
        for planned in self.servers:
            for moved in planned.moved:
                if moved.to == "env":
                    seen.setdefault(moved.key, f"{planned.app_id} {moved.place}: {moved.note}")
        return sorted(seen.items())

    def clients(self) -> dict[str, list[Source]]:
        """The servers imported, by client, in the order found."""
        found: dict[str, list[Source]] = {}
        for planned in self.servers:
            for source in planned.sources:
                found.setdefault(source.client, []).append(source)
        return found


class ImportFailed(Exception):
    """A server that cannot be made into a descriptor without a secret in plain text, or at all."""


def plan(
    found: Found,
    aai_home: Path,
    env: Mapping[str, str],
    secrets: str,
    store: Store | None,
    *,
    force: bool,
    gateway_port: int | None = None,
) -> Plan:
    """What `import` does with the servers found; nothing is written (see `write`). `gateway_port`:
    the port `--web` serves on, so that an entry for the gateway's own `/mcp` on loopback is left out."""
    result = Plan([], list(found.problems), list(found.skipped), found.files, secrets)
    groups: dict[tuple[str, ...], list[tuple[Server, dict[str, Any]]]] = {}
    for server in found.servers:
        if server.transport == "sse":
            result.problems.append(
                Problem(
                    server.source.where(),
                    "uses the SSE transport, which the gateway does not speak (stdio and streamable HTTP only); "
                    "if the server also serves streamable HTTP, point url at that endpoint (often /mcp)",
                )
            )
            continue
        try:
            target = _target(server, env)
        except ImportFailed as exc:
            result.problems.append(Problem(server.source.where(), str(exc)))
            continue
        if _is_gateway(target, gateway_port):
            result.skipped.append(Problem(server.source.where(), "is aai-gateway itself; left as it is"))
            continue
        groups.setdefault(_identity(target), []).append((server, target))
    taken: set[str] = set()
    chosen = [(members, _app_id(members[0][0].source.name, taken)) for members in groups.values()]
    names = _env_names(chosen)
    for members, app_id in chosen:
        server, target = members[0]
        try:
            execution, moved = _execution(server, target, app_id, secrets=secrets, names=names, env=env)
        except ImportFailed as exc:
            result.problems.append(Problem(server.source.where(), str(exc)))
            continue
        planned = Planned(
            app_id,
            aai_home / app_id / DESCRIPTOR,
            _descriptor(app_id, server, target, execution, moved),
            [m.source for m, _ in members],
            moved,
        )
        for other, _ in members[1:]:
            if (other.env, other.headers) != (server.env, server.headers):
                planned.notes.append(
                    f"{other.source.where()} runs the same server with other env or headers; "
                    f"those of {server.source.where()} are used"
                )
        _compare(planned, store, force)
        result.servers.append(planned)
    return result


def write(result: Plan, store: Store | None) -> None:
    """Store the keyring secrets and write the descriptors `plan` marked new (or changed, with --force)."""
    for planned in result.servers:
        if planned.status not in ("new", "overwrite", "unchanged"):
            continue
        try:
            for moved in planned.moved:
                if moved.to == "keyring" and moved.value is not None:
                    assert store is not None
                    if store.get(moved.key) != moved.value:
                        store.set(moved.key, moved.value)
            if planned.status == "overwrite" and planned.path.exists() and _on_disk(planned) != planned.descriptor:
                planned.backup = paths.keep_backup(planned.path)
            if planned.status != "unchanged":
                _write_json(planned.path, planned.descriptor)
        except Exception as exc:  # a keyring or disk failure is this server's problem, not the others'
            result.problems.append(Problem(str(planned.path), f"not written: {exc}"))
            planned.status = "failed"
            continue
        planned.status = {"new": "written", "overwrite": "overwritten"}.get(planned.status, planned.status)


def _target(server: Server, env: Mapping[str, str]) -> dict[str, Any]:
    """The command, args, cwd or url as plain text: the descriptor holds them as written."""
    if server.transport == "stdio":
        assert server.command is not None
        target: dict[str, Any] = {"command": _plain(server.command, "command", server, env)}
        target["args"] = [_arg(a, f"args[{i}]", server, env) for i, a in enumerate(server.args)]
        if server.cwd is not None:
            target["cwd"] = _plain(server.cwd, "cwd", server, env)
        return target
    assert server.url is not None
    url = _plain(server.url, "url", server, env)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        found = secret_url(url)
        raise ImportFailed(f"url {found.masked if found else url!r} is not an http(s) URL")
    return {"url": url}


def _is_gateway(target: dict[str, Any], port: int | None) -> bool:
    command = target.get("command")
    if command is not None:
        return Path(command).stem == "aai-gateway" or "aai_gateway" in target["args"][:2]
    parts = urlsplit(target["url"])
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    return loopback and parts.port == port and parts.path.rstrip("/") == "/mcp"


def _identity(target: dict[str, Any]) -> tuple[str, ...]:
    if "url" in target:
        return ("url", target["url"].rstrip("/"))
    return ("stdio", target["command"], *map(repr, target["args"]), "\0", target.get("cwd", ""))


_PREDEFINED = re.compile(r"\$\{([^}]*)\}")
_HOMES = ("HOME", "USERPROFILE")


def _plain(value: Value, where: str, server: Server, env: Mapping[str, str]) -> str:
    """`value` as text: `${userHome}`, `${HOME}` and `${workspaceFolder}` resolved, any other reference refused."""
    home = str(paths.home(env))
    text = []
    for part in value:
        if isinstance(part, EnvVar) and part.name in _HOMES:
            text.append(home)
        elif isinstance(part, str):
            text.append(_predefined(part, server, env, where))
        else:
            shown = f"${{input:{part.id}}}" if isinstance(part, Input) else f"${{{part.name}}}"
            raise ImportFailed(
                f"{where} uses {shown}, which a descriptor cannot hold there (a reference only as a whole argument, "
                "env or header value): pass the value to the server through env instead, then import again"
            )
    return "".join(text)


def _arg(value: Value, where: str, server: Server, env: Mapping[str, str]) -> str | EnvVar | Input:
    """An argument as text, or the one reference it is (`${TOKEN}`, `${input:key}`), kept as a reference."""
    if len(value) == 1 and isinstance(value[0], Input | EnvVar) and getattr(value[0], "name", "") not in _HOMES:
        return value[0]
    return _plain(value, where, server, env)


def _predefined(text: str, server: Server, env: Mapping[str, str], where: str) -> str:
    """VS Code's and Cursor's predefined variables, where the import knows them."""
    known = {"userHome": str(paths.home(env)), "pathSeparator": os.sep, "/": os.sep}
    if server.workspace is not None:
        known["workspaceFolder"] = str(server.workspace)
        known["workspaceFolderBasename"] = server.workspace.name

    def resolve(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in known:
            raise ImportFailed(
                f"{where} uses ${{{name}}}, which the import cannot resolve here; write the value instead"
            )
        return known[name]

    return _PREDEFINED.sub(resolve, text)


def _app_id(name: str, taken: set[str]) -> str:
    """`mcp.<name>` as a valid appId (see names.app_id_for), with `-2`, `-3`, … when it is taken."""
    base = app_id_for("mcp", name, unnamed="server")[: MAX_APP_ID - 4].rstrip("-")
    candidate, number = base, 2
    while candidate in taken:
        candidate, number = f"{base}-{number}", number + 1
    taken.add(candidate)
    return candidate


def _variable(*words: str) -> str:
    """An environment variable name: `mcp.github`, `Authorization` → `GITHUB_AUTHORIZATION`."""
    text = re.sub(r"[^A-Za-z0-9]+", "_", "_".join(words)).strip("_").upper()
    return text if text and not text[0].isdigit() else f"MCP_{text}"


def _segment(app_id: str) -> str:
    return app_id.split(".", 1)[1]


def _env_names(chosen: list[tuple[list[tuple[Server, dict[str, Any]]], str]]) -> dict[tuple[str, str], str]:
    """The variable each literal secret of `env` goes to with `--secrets env`: its own key, unless
    servers give that key different values, then `<APP>_<KEY>`."""
    values: dict[str, set[str]] = {}
    for members, _ in chosen:
        server = members[0][0]
        for key, value in server.env.items():
            text = _literal(value)
            if text is not None and _is_secret(server, key, text):
                values.setdefault(key, set()).add(text)
    names = {}
    for members, app_id in chosen:
        for key in members[0][0].env:
            clash = len(values.get(key, ())) > 1 or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key)
            names[(app_id, key)] = _variable(_segment(app_id), key) if clash else key
    return names


def _literal(value: Value) -> str | None:
    return "".join(value) if all(isinstance(p, str) for p in value) else None  # type: ignore[arg-type]


def _is_secret(server: Server, key: str, text: str) -> bool:
    return key in server.secret_env or looks_secret(key, text)


def _execution(
    server: Server,
    target: dict[str, Any],
    app_id: str,
    *,
    secrets: str,
    names: dict[tuple[str, str], str],
    env: Mapping[str, str],
) -> tuple[dict[str, Any], list[Moved]]:
    execution: dict[str, Any] = {"type": "mcp", **target}
    moved: list[Moved] = []
    hide = _Hider(server, app_id, secrets, moved)
    if "args" in target:
        texts = [a if isinstance(a, str) else "" for a in target["args"]]
        execution["args"] = [
            hide.arg(i, arg, secret_arg(texts, i) if isinstance(arg, str) else None)
            for i, arg in enumerate(target["args"])
        ]
    if "url" in target:
        found = secret_url(target["url"])
        if found is not None:
            execution["url"] = hide.literal("url", "url", target["url"], _variable(_segment(app_id), "url"), found)
    values = server.env if server.transport == "stdio" else server.headers
    kind = "env" if server.transport == "stdio" else "headers"
    out: dict[str, Any] = {}
    for key, value in values.items():
        where = f"{kind}.{key}"
        text = _literal(value)
        if text is not None:
            if not _is_secret(server, key, text):
                out[key] = _predefined(text, server, env, where) if "${" in text else text
                continue
            name = names[(app_id, key)] if kind == "env" else _variable(_segment(app_id), key)
            out[key] = hide.literal(where, key, text, name)
        elif len(value) == 1:
            assert isinstance(value[0], EnvVar | Input)
            out[key] = hide.reference(where, value[0])
        else:
            # Text around a reference (`Bearer ${TOKEN}`): the whole value becomes one variable.
            name = _variable(_segment(app_id), key)
            out[key] = {"$env": name}
            moved.append(Moved(where, "env", name, f"set it to: {_template(value)}"))
    if out:
        execution[kind] = out
    return execution, moved


@dataclass
class _Hider:
    """Puts a reference where a descriptor would hold a secret, and says where the value went."""

    server: Server
    app_id: str
    secrets: str
    moved: list[Moved]

    def literal(self, where: str, key: str, text: str, variable: str, found: Hidden | None = None) -> dict[str, str]:
        """A secret written in the client's file: to the keyring, or to a variable for the user to set."""
        shown = found.masked if found else MASK
        if self.secrets == "keyring":
            item = f"{self.app_id}|{key}"
            self.moved.append(Moved(where, "keyring", item, "stored in the keyring", text, shown))
            return {"$keyring": item}
        file = self.server.source.file
        whole = f"the whole value as {file} has it: {shown}" if found else f"the value it had in {file}"
        self.moved.append(Moved(where, "env", variable, whole, shown=shown))
        return {"$env": variable}

    def reference(self, where: str, part: EnvVar | Input) -> dict[str, str]:
        """A reference the client's file had: the same variable (or one for VS Code's input)."""
        if isinstance(part, EnvVar):
            dropped = f" (its default {part.default!r} is not kept)" if part.default is not None else ""
            note = f"{CLIENTS[self.server.source.client]} read it from the environment too{dropped}"
            self.moved.append(Moved(where, "env", part.name, note, shown=f"${part.name}"))
            return {"$env": part.name}
        name = _variable(part.id)
        self.moved.append(Moved(where, "env", name, f"what VS Code asked for as input {part.id!r}", shown=f"${name}"))
        return {"$env": name}

    def arg(self, index: int, arg: str | EnvVar | Input, found: Hidden | None) -> str | dict[str, str]:
        where = f"args[{index}]"
        if not isinstance(arg, str):
            return self.reference(where, arg)
        if found is None:
            return arg
        variable = _variable(_segment(self.app_id), found.name or f"arg {index}")
        if any(m.key == variable for m in self.moved):
            variable = _variable(_segment(self.app_id), found.name, f"arg {index}")
        return self.literal(where, where, arg, variable, found)


def _template(value: Value) -> str:
    shown = []
    for part in value:
        if isinstance(part, str):
            shown.append("<secret>" if token_shaped(part.strip()) else part)
        elif isinstance(part, EnvVar):
            shown.append(f"${part.name}")
        else:
            shown.append(f"<input {part.id}>")
    return "".join(shown)


def _descriptor(
    app_id: str, server: Server, target: dict[str, Any], execution: dict[str, Any], moved: list[Moved]
) -> dict[str, Any]:
    alias = _segment(app_id)
    name = server.source.name.strip() or alias
    if "url" in target:
        url = next((m.shown for m in moved if m.place == "url"), target["url"])
        description = f"The MCP server {name} at {url} (streamable HTTP)."
    else:
        description = f"The MCP server {name}, run as {Path(target['command']).name} (stdio)."
    return {
        "schemaVersion": "1.0",
        "version": "1.0.0",
        "platform": "mcp",
        "app": {
            "id": app_id,
            "name": {"en": name},
            "defaultLang": "en",
            "description": description,
            "aliases": [alias],
        },
        "execution": execution,
    }


def _compare(planned: Planned, store: Store | None, force: bool) -> None:
    """Mark `planned` unchanged, or differs (kept unless --force) from what is already on disk and in the keyring."""
    differences = []
    if planned.path.exists() and _on_disk(planned) != planned.descriptor:
        differences.append(f"{planned.path} exists and differs")
    for moved in planned.moved:
        if moved.to == "keyring" and store is not None:
            try:
                held = store.get(moved.key)
            except AaiError as exc:
                planned.notes.append(f"cannot read the keyring item {moved.key}: {exc}")
                continue
            if held is not None and held != moved.value:
                differences.append(f"the keyring already holds another value for {moved.key}")
    if differences:
        planned.status = "overwrite" if force else "differs"
        planned.notes.append("; ".join(differences) + ("" if force else "; --force replaces it"))
    elif planned.path.exists():
        planned.status = "unchanged"


def _on_disk(planned: Planned) -> Any:
    """The descriptor on disk where `planned` goes, or why it cannot be read (never equal to a descriptor)."""
    try:
        return json.loads(planned.path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return exc


def _write_json(path: Path, document: dict[str, Any]) -> None:
    """Atomically: a temporary file beside it, then a rename; normal permissions (no secrets inside)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=2, ensure_ascii=False)
            out.write("\n")
        Path(temporary).chmod(0o644)
        Path(temporary).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()
        raise


def client_entry(client: str, command: str = "aai-gateway") -> str:
    """The gateway's one entry, in `client`'s own format, as the README's client snippets have it."""
    if client == "codex":
        return f'[mcp_servers.{ENTRY_NAME}]\ncommand = {json.dumps(command)}\nargs = ["--mcp"]\n'
    kind = '"type": "stdio", ' if client == "vscode" else ""
    key = "servers" if client == "vscode" else "mcpServers"
    entry = f'"{ENTRY_NAME}": {{ {kind}"command": {json.dumps(command)}, "args": ["--mcp"] }}'
    return f'{{\n  "{key}": {{\n    {entry}\n  }}\n}}\n'

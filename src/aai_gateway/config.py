"""Settings: read once from `~/.aai/config.json` and the environment, then frozen.

A missing file means defaults. An unknown key or a wrong type is a `ConfigError` naming the key.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator

from aai_gateway import paths
from aai_gateway.errors import ConfigError
from aai_gateway.problems import describe, pointer
from aai_gateway.session_bus import RecordedBus, recorded

DEFAULT_SCAN_PATH = "~/.aai"


class Secret:
    """A secret value whose repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


@dataclass(frozen=True, slots=True)
class AppSettings:
    """Per-app settings (`apps.<appId>` in config.json); secrets come from the environment."""

    timeout: float | None = None
    client_id: str | None = None
    client_secret: Secret | None = None
    api_key: Secret | None = None
    redirect_port: int = 0
    max_concurrent_calls: int | None = None
    """This app's share of the gateway's slots; None: `maxCallsPerApp`."""


@dataclass(frozen=True, slots=True)
class LlmSettings:
    """The OpenAI-compatible endpoint `--generate --llm` asks (`llm` in config.json)."""

    base_url: str
    model: str
    api_key: Secret | None = None
    timeout: float = 60.0
    embedding_model: str | None = None
    """`llm.embeddingModel`: what search asks `<baseUrl>/embeddings` with (`search.embeddings`)."""


@dataclass(frozen=True, slots=True)
class ConsentRule:
    """One `consent.rules` entry: a caller (None: any), an app and a tool (None: any), "*" matching any."""

    app: str
    decision: str
    caller: str | None = None
    tool: str | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    scan_paths: tuple[Path, ...]
    platform: str
    store_urls: tuple[str, ...] = ()
    """Store indexes `aai-gateway library` merges and `install` fetches from."""
    default_timeout: float = 30.0
    log_level: str = "info"
    enable_web_ui: bool = True
    http_host: str = "127.0.0.1"
    http_port: int = 3000
    scan_interval_minutes: float = 0.0
    tool_names: str = "strict"
    """How the gateway's tools are listed: "strict" (`aai_exec`) or "seed" (`aai:exec`)."""
    error_style: str = "result"
    catalogue: str = "auto"
    """`catalogue`: "auto", "apps" or "search": whether `tools/list` holds a guide tool per app."""
    """How tool errors come back: "result" (`isError` tool results) or "jsonrpc" (JSON-RPC errors)."""
    max_descriptor_bytes: int = 1024 * 1024
    history_retention_days: float = 30.0
    require_history: bool = False
    fast_stdio: bool = True
    """Over stdio, answer initialize and tools/list before the SDK is imported, and calls off the wire."""
    fast_http: bool = True
    """Over HTTP, answer the calls of established sessions in front of the SDK's transport."""
    mcp_auth: str = "remote"
    """When `/mcp` requires a bearer token: "remote" (listening beyond loopback) or "always"."""
    mcp_token: str | None = None
    """The environment variable `mcpToken` names; None: the token file `<AAI home>/mcp-token`."""
    mcp_token_value: Secret | None = None
    """That variable's value, when it is set (it is checked when `--web` starts, not here)."""
    max_concurrent_calls: int = 32
    """Operations running at once across the whole gateway (and the parallelism of one aai:batch)."""
    max_calls_per_app: int = 16
    mcp_idle_seconds: float = 600.0
    """Seconds without calls after which a stdio MCP server served as an app is stopped; 0: never."""
    """Operations running at once for one app, so a hung app leaves the other slots to the others."""
    web_allow_http_loopback: bool = False
    web_allow_private_networks: bool = False
    web_cache_ttl_hours: float = 24.0
    web_max_response_bytes: int = 10 * 1024 * 1024
    web_timeout: float = 30.0
    llm_base_url: str | None = None
    """`llm.baseUrl`: the OpenAI-compatible API `--generate --llm` posts `/chat/completions` to."""
    llm_model: str | None = None
    llm_api_key: str | None = None
    """The environment variable `llm.apiKey` names; its value is `llm_api_key_value`."""
    llm_api_key_value: Secret | None = None
    llm_timeout: float = 60.0
    llm_embedding_model: str | None = None
    apps: Mapping[str, AppSettings] = field(default_factory=dict)
    consent_default: str = "ask"
    consent_read_only: str = "ask"
    consent_install: str = "ask"
    """`consent.install`: whether an agent's `aai_install` asks the user ("ask"), installs bundled entries that
    run no program unasked ("library"), or is refused ("deny"). `consent.default` never approves an install."""
    """"allow": tools marked read-only need no question when no stored decision or rule decides."""
    consent_rules: tuple[ConsentRule, ...] = ()
    consent_wait_seconds: float = 0
    """How long a call that needs consent waits for a decision in the web UI (or the CLI) before it
    answers CONSENT_REQUIRED; only when the UI is served and the client cannot be asked."""
    search_semantic: bool = False
    """`search.semantic`: rank by meaning too, with the wordllama model (an optional dependency)."""
    search_embeddings: bool = False
    """`search.embeddings`: rank by meaning too, with vectors from the `llm` endpoint's `/embeddings`."""
    telemetry_enabled: bool | None = None
    """OpenTelemetry export: True or False as config.json says; None: on when OTEL_* variables ask for it."""
    telemetry_endpoint: str | None = None
    telemetry_headers: Mapping[str, Secret] = field(default_factory=dict)
    """Headers sent with each export; every value is kept as a secret, since collectors take tokens in them."""
    telemetry_service_name: str | None = None
    telemetry_capture_arguments: bool = False
    cache_dir: Path = field(default_factory=lambda: Path.home() / ".cache" / "aai-gateway")
    aai_home: Path = field(default_factory=lambda: Path.home() / ".aai")
    home: Path = field(default_factory=Path.home)
    session_bus: RecordedBus | None = None
    """The session bus scripts/quickstart recorded, when DBUS_SESSION_BUS_ADDRESS is unset (used if usable)."""
    config_file: Path | None = None
    """The file the settings came from, or None when defaults were used."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """For each setting that did not come from defaults, where it came from."""

    @property
    def workflows_dir(self) -> Path:
        """Where the saved workflows are: `workflows/` in the AAI home."""
        return self.aai_home / "workflows"

    @property
    def llm(self) -> LlmSettings | None:
        """The LLM endpoint, when config.json names one (`llm.baseUrl` and `llm.model`)."""
        if self.llm_base_url is None or self.llm_model is None:
            return None
        return LlmSettings(
            self.llm_base_url, self.llm_model, self.llm_api_key_value, self.llm_timeout, self.llm_embedding_model
        )

    def with_changes(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def from_option(self, option: str, **changes: Any) -> Settings:
        """These settings with `changes` given on the command line by `option` (e.g. "--port")."""
        keys = {name: key for key, name in setting_fields().items()}
        return replace(self, **changes, sources={**self.sources, **{keys[name]: option for name in changes}})


@cache
def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(files("aai_gateway").joinpath("config.schema.json").read_text("utf-8"))
    return schema


def known_keys() -> list[str]:
    """Every documented key: top-level ones, and `web.*` for the fixed nested object."""
    keys = []
    for key, spec in _schema()["properties"].items():
        keys.append(key)
        keys.extend(f"{key}.{sub}" for sub in spec.get("properties", {}))
    return sorted(keys)


NOT_SHOWN = frozenset({"apps"})
"""Keys `setting_fields` leaves out: per-app settings, which hold secrets, have no one value."""


def setting_fields() -> dict[str, str]:
    """Each config.json key that holds one value, spelled as in the schema, → its `Settings` field."""
    keys: list[str] = []
    for key, spec in _schema()["properties"].items():
        if "properties" in spec:
            keys.extend(f"{key}.{sub}" for sub in spec["properties"])
        elif key not in NOT_SHOWN:
            keys.append(key)
    return {key: _CAPITAL.sub(r"_\1", key.replace(".", "_")).lower() for key in keys}


_CAPITAL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def source_text(source: str | None) -> str:
    """Where a setting came from, in words, from its entry in `Settings.sources`."""
    if source is None:
        return "default"
    if source.startswith("--"):
        return f"command-line option {source}"
    if ENV_NAME.fullmatch(source):
        return f"environment variable {source}"
    return f"config file {source}"


ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def config_value(value: Any) -> Any:
    """A setting's value as config.json would hold it."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | list):
        return [config_value(v) for v in value]
    if isinstance(value, ConsentRule):
        rule = {"caller": value.caller, "app": value.app, "tool": value.tool, "decision": value.decision}
        return {k: v for k, v in rule.items() if v is not None}
    if isinstance(value, Secret):
        return str(value)
    if isinstance(value, Mapping):
        return {key: config_value(item) for key, item in value.items()}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@cache
def _validator() -> Draft7Validator:
    return Draft7Validator(_schema())


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse and check a config file; every problem is reported at once, each naming its key."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    except RecursionError:
        raise ConfigError(f"{path}: the JSON is nested too deeply to read") from None
    except ValueError as exc:  # a number with more digits than Python converts
        raise ConfigError(f"{path}: invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a JSON object of settings, got {type(data).__name__}")
    try:
        unreal = [f"{path}: key '{where}': must be a finite number, got {value}" for where, value in _non_finite(data)]
        errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    except RecursionError:
        raise ConfigError(f"{path}: the settings are nested too deeply to check") from None
    if unreal:  # Python's json reads NaN, Infinity and 1e400, which JSON Schema's bounds let through
        raise ConfigError("\n".join(unreal))
    if errors:
        lines = []
        for err in errors:
            where = pointer(err.absolute_path)
            if err.validator == "additionalProperties":
                top = sorted(_schema()["properties"])
                if err.absolute_path:
                    lines.append(f"{path}: key '{where.lstrip('/')}': {describe(err)}")
                    continue
                known = ", ".join(top)
                extra = sorted(set(data) - set(top))
                for key in extra:
                    lines.append(f"{path}: unknown key '{key}' (known keys: {known})")
                continue
            key = where.lstrip("/") or "(root)"
            lines.append(f"{path}: key '{key}': {describe(err)}")
        raise ConfigError("\n".join(lines))
    return data


def _non_finite(value: Any, where: tuple[str, ...] = ()) -> Iterator[tuple[str, float]]:
    """Each NaN or infinity in `value`, with its key spelled as in ConfigError messages."""
    if isinstance(value, float) and not math.isfinite(value):
        yield "/".join(where), value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, (*where, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_finite(item, (*where, str(index)))


def _secret(app_id: str, key: str, raw: Any, env: Mapping[str, str]) -> Secret | None:
    if raw is None:
        return None
    name = raw["$env"]
    value = env.get(name)
    if not value:
        raise ConfigError(f"key 'apps/{app_id}/{key}': environment variable {name} is not set")
    return Secret(value)


def _headers(raw: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Secret]:
    """`telemetry.headers`: each a text, or a secret read from the environment variable it names."""
    headers = {}
    for name, value in raw.items():
        if isinstance(value, str):
            headers[name] = Secret(value)
            continue
        variable = value["$env"]
        if not env.get(variable):
            raise ConfigError(f"key 'telemetry/headers/{name}': environment variable {variable} is not set")
        headers[name] = Secret(env[variable])
    return headers


def _app_settings(app_id: str, raw: Mapping[str, Any], env: Mapping[str, str]) -> AppSettings:
    timeout = raw.get("timeout")
    return AppSettings(
        timeout=None if timeout is None else float(timeout),
        client_id=raw.get("clientId"),
        client_secret=_secret(app_id, "clientSecret", raw.get("clientSecret"), env),
        api_key=_secret(app_id, "apiKey", raw.get("apiKey"), env),
        redirect_port=raw.get("redirectPort", 0),
        max_concurrent_calls=raw.get("maxConcurrentCalls"),
    )


def load_settings(env: Mapping[str, str] | None = None, config_path: Path | None = None) -> Settings:
    env = paths.environ() if env is None else env
    home = paths.aai_home(env)
    path = config_path or paths.config_file(env)
    data = read_config_file(path)
    sources: dict[str, str] = {key: str(path) for key in data}
    for group in ("web", "consent", "llm", "telemetry"):
        sources.update((f"{group}.{key}", str(path)) for key in data.get(group, {}))
    if env.get("AAI_HOME"):
        sources["aai_home"] = "AAI_HOME"

    platform = data.get("platform") or paths.host_platform()
    if env.get("AAI_PLATFORM"):
        platform = env["AAI_PLATFORM"]
        if platform not in paths.PLATFORMS:
            raise ConfigError(
                f"environment variable AAI_PLATFORM: must be one of {', '.join(paths.PLATFORMS)}; got '{platform}'"
            )
        sources["platform"] = "AAI_PLATFORM"

    scan_paths = tuple(paths.expand(p, env) for p in data.get("scanPaths", [str(home)]))
    web = data.get("web", {})
    apps = {app_id: _app_settings(app_id, raw, env) for app_id, raw in data.get("apps", {}).items()}
    consent = data.get("consent", {})
    telemetry = data.get("telemetry", {})
    token_env = data["mcpToken"]["$env"] if "mcpToken" in data else None
    llm = data.get("llm", {})
    llm_key_env = llm["apiKey"]["$env"] if "apiKey" in llm else None
    rules = tuple(
        ConsentRule(app=r["app"], decision=r["decision"], caller=r.get("caller"), tool=r.get("tool"))
        for r in consent.get("rules", [])
    )
    return Settings(
        scan_paths=scan_paths,
        platform=platform,
        store_urls=tuple(data.get("storeUrls", ())),
        default_timeout=float(data.get("defaultTimeout", 30)),
        log_level=data.get("logLevel", "info"),
        enable_web_ui=data.get("enableWebUI", True),
        http_host=data.get("httpHost", "127.0.0.1"),
        http_port=data.get("httpPort", 3000),
        scan_interval_minutes=float(data.get("scanIntervalMinutes", 0)),
        tool_names=data.get("toolNames", "strict"),
        error_style=data.get("errorStyle", "result"),
        catalogue=data.get("catalogue", "auto"),
        max_descriptor_bytes=data.get("maxDescriptorBytes", 1024 * 1024),
        history_retention_days=float(data.get("historyRetentionDays", 30)),
        require_history=data.get("requireHistory", False),
        max_concurrent_calls=data.get("maxConcurrentCalls", 32),
        max_calls_per_app=data.get("maxCallsPerApp", 16),
        mcp_idle_seconds=float(data.get("mcpIdleSeconds", 600)),
        fast_stdio=data.get("fastStdio", True),
        fast_http=data.get("fastHttp", True),
        mcp_auth=data.get("mcpAuth", "remote"),
        mcp_token=token_env,
        mcp_token_value=Secret(env[token_env]) if token_env and env.get(token_env) else None,
        web_allow_http_loopback=web.get("allowHttpLoopback", False),
        web_allow_private_networks=web.get("allowPrivateNetworks", False),
        web_cache_ttl_hours=float(web.get("cacheTtlHours", 24)),
        web_max_response_bytes=web.get("maxResponseBytes", 10 * 1024 * 1024),
        web_timeout=float(web.get("timeout", 30)),
        llm_base_url=llm.get("baseUrl"),
        llm_model=llm.get("model"),
        llm_api_key=llm_key_env,
        llm_api_key_value=Secret(env[llm_key_env]) if llm_key_env and env.get(llm_key_env) else None,
        llm_timeout=float(llm.get("timeout", 60)),
        llm_embedding_model=llm.get("embeddingModel"),
        apps=apps,
        consent_default=consent.get("default", "ask"),
        consent_read_only=consent.get("readOnly", "ask"),
        consent_install=consent.get("install", "ask"),
        consent_rules=rules,
        consent_wait_seconds=float(consent.get("waitSeconds", 0)),
        search_semantic=data.get("search", {}).get("semantic", False),
        search_embeddings=data.get("search", {}).get("embeddings", False),
        telemetry_enabled=telemetry.get("enabled"),
        telemetry_endpoint=telemetry.get("endpoint"),
        telemetry_headers=_headers(telemetry.get("headers", {}), env),
        telemetry_service_name=telemetry.get("serviceName"),
        telemetry_capture_arguments=telemetry.get("captureArguments", False),
        cache_dir=paths.cache_dir(env),
        aai_home=home,
        home=paths.home(env),
        session_bus=recorded(env),
        config_file=path if data or path.exists() else None,
        sources=sources,
    )

"""Credentials for web requests: `api_key`, `bearer` and `oauth2` from a binding's auth section.

Shape A writes the fields flat (`type`, `env_var`, `key_name`, `key_placement`, `token_placement`,
`token_prefix`); shapes B and C may nest them under the type (`{"type": "apiKey", "apiKey": {...}}`).
A key or bearer token comes from `apps.<appId>.apiKey` in the config, else from the environment
variable the descriptor names. OAuth 2 tokens come from `aai_gateway.auth.oauth`. Every credential
is a `Secret` until the moment it is put on the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from aai_gateway.config import Secret, Settings
from aai_gateway.descriptor import Descriptor
from aai_gateway.errors import AuthConfigInvalid, AuthRequired, AutomationNotSupported
from aai_gateway.executors.http_request import CONTROL, HEADER_NAME

KINDS = {"api_key": "api_key", "apikey": "api_key", "api-key": "api_key", "bearer": "bearer", "oauth2": "oauth2"}
PLACEMENTS = ("header", "query")
OAUTH_MODULE = "aai_gateway.auth.oauth"


@dataclass(frozen=True, slots=True)
class AuthSpec:
    kind: str | None
    """"api_key", "bearer", "oauth2", or None for no auth."""
    placement: str = "header"
    name: str = "Authorization"
    """The header or query parameter that carries the credential."""
    prefix: str = ""
    env_var: str | None = None

    @property
    def noun(self) -> str:
        return {"api_key": "API key", "bearer": "bearer token"}.get(self.kind or "", "access token")

    @property
    def what(self) -> str:
        return {"api_key": "an API key", "bearer": "a bearer token"}.get(self.kind or "", "an access token")


@dataclass(frozen=True, slots=True)
class Credential:
    placement: str
    name: str
    value: Secret
    """What goes on the wire: the token with its prefix."""
    token: Secret
    source: str
    """Where the token came from, for a person fixing a refused one."""


def auth_spec(auth: Mapping[str, Any] | None) -> AuthSpec:
    if not auth:
        return AuthSpec(None)
    raw_kind = str(auth.get("type") or "none")
    if raw_kind.lower() == "none":
        return AuthSpec(None)
    kind = KINDS.get(raw_kind.lower())
    if kind is None:
        raise AuthConfigInvalid(f"auth type '{raw_kind}' is not one of api_key, bearer, oauth2, none")
    own = (raw_kind, kind, "apiKey")
    nested: Mapping[str, Any] = next((auth[k] for k in own if isinstance(auth.get(k), Mapping)), {})
    fields = {**{k: v for k, v in auth.items() if not isinstance(v, Mapping)}, **nested}
    key_field = "key_placement" if kind == "api_key" else "token_placement"
    placement = str(fields.get(key_field) or fields.get("placement") or fields.get("in") or "header").lower()
    if placement not in PLACEMENTS:
        raise AuthConfigInvalid(f"auth {key_field} '{placement}' is not header or query")
    name = fields.get("key_name") or fields.get("name") or _default_name(kind, placement)
    if not isinstance(name, str) or (placement == "header" and not HEADER_NAME.fullmatch(name)):
        raise AuthConfigInvalid(f"auth key_name {name!r} is not a valid {placement} name")
    prefix = fields.get("token_prefix")
    if prefix is None:
        prefix = "Bearer" if kind != "api_key" and placement == "header" and name.lower() == "authorization" else ""
    env_var = fields.get("env_var")
    if env_var is not None and not (isinstance(env_var, str) and env_var):
        raise AuthConfigInvalid("auth env_var must be the name of an environment variable")
    return AuthSpec(kind, placement, name, str(prefix), env_var)


def _default_name(kind: str, placement: str) -> str:
    if placement == "query":
        return "api_key" if kind == "api_key" else "access_token"
    return "X-API-Key" if kind == "api_key" else "Authorization"


def fetched_from(app: Descriptor) -> str | None:
    """The site a descriptor was fetched from by web:discover (`<origin>/.well-known/aai.json`), or None
    for one installed on this machine."""
    if app.source.startswith(("https://", "http://")):
        return app.source.split("/.well-known/", 1)[0]
    return None


def how_to_provide(spec: AuthSpec, app_id: str, settings: Settings) -> str:
    config = _config_path(settings)
    via_env = f"set the environment variable {spec.env_var} for the gateway, or " if spec.env_var else ""
    return (
        f"{app_id} needs {spec.what}: {via_env}add "
        f'"apps": {{"{app_id}": {{"apiKey": {{"$env": "NAME"}}}}}} to {config}, '
        "where NAME is an environment variable of the gateway that holds it"
    )


def _config_path(settings: Settings) -> str:
    return str(settings.config_file or settings.aai_home / "config.json")


def stored_token(spec: AuthSpec, app_id: str, settings: Settings, environ: Mapping[str, str]) -> tuple[Secret, str]:
    """The key or bearer token for `app_id` and where it came from: the config's `apiKey` first, then the
    descriptor's env_var."""
    app = settings.apps.get(app_id)
    if app and app.api_key:
        token, source = app.api_key, f"apps.{app_id}.apiKey in {_config_path(settings)}"
    elif spec.env_var and environ.get(spec.env_var, "").strip():
        token, source = Secret(environ[spec.env_var].strip()), f"the environment variable {spec.env_var}"
    else:
        raise AuthRequired(how_to_provide(spec, app_id, settings))
    if CONTROL.search(token.reveal()):
        raise AuthConfigInvalid(f"the {spec.noun} from {source} contains line breaks or control characters")
    return token, source


async def oauth_token(settings: Settings, app_id: str, site: str, auth: Mapping[str, Any], *, force: bool) -> Secret:
    """An OAuth 2 access token from the auth layer, which raises AuthRequired or AuthExpired itself."""
    try:
        oauth = import_module(OAUTH_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != OAUTH_MODULE:
            raise
        raise AutomationNotSupported(f"{app_id} signs in with OAuth 2, which this gateway cannot do yet") from None
    token = await oauth.access_token(settings, app_id, site, dict(auth), force_refresh=force)
    if not isinstance(token, str) or not token or CONTROL.search(token):
        raise AuthConfigInvalid(f"the OAuth 2 sign-in of {app_id} gave no usable access token")
    return Secret(token)


def credential(spec: AuthSpec, token: Secret, source: str) -> Credential:
    value = f"{spec.prefix} {token.reveal()}" if spec.prefix else token.reveal()
    return Credential(spec.placement, spec.name, Secret(value), token, source)

"""An mcp binding's execution block and auth, turned into what starts or reaches its server.

Secrets are never written in a descriptor: an `env` or `headers` value may be `{"$env": NAME}` (the
gateway's environment) or `{"$keyring": KEY}` (the gateway's secret store, service "aai-gateway").
An HTTP server may use the web executor's auth (bearer token, API key in a header, OAuth 2 with PKCE).

Every value resolved from a reference or from auth is a secret: it is `remember`ed as soon as it is
resolved (so the gateway's log and history cut it, whatever quotes it) and travels in `Launch.secrets`
(so whatever the server says is cut of it before anyone reads it).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from aai_gateway.auth.secrets import open_store
from aai_gateway.config import Settings
from aai_gateway.descriptor import Binding, Descriptor
from aai_gateway.errors import AuthConfigInvalid, AuthRequired
from aai_gateway.executors.http_auth import auth_spec, credential, oauth_token, stored_token
from aai_gateway.mcp_client import Launch
from aai_gateway.secret_forms import remember


async def launch_of(app: Descriptor, binding: Binding, settings: Settings) -> Launch:
    options = binding.options
    secrets: list[str] = []
    env = await _resolved(app.app_id, "execution.env", options.get("env") or {}, settings, secrets)
    headers = await _resolved(app.app_id, "execution.headers", options.get("headers") or {}, settings, secrets)
    url = options.get("url")
    if url and binding.auth:
        headers.update(await _auth_headers(app.app_id, str(url), binding.auth, settings, secrets))
    return Launch(
        app_id=app.app_id,
        command=options.get("command"),
        args=tuple(options.get("args") or ()),
        env=env,
        cwd=options.get("cwd"),
        url=url,
        headers=headers,
        idle=settings.mcp_idle_seconds,
        secrets=tuple(secrets),
    )


async def _resolved(
    app_id: str, where: str, values: Mapping[str, Any], settings: Settings, secrets: list[str]
) -> dict[str, str]:
    """The values as written, or resolved from a reference (each of those added to `secrets`)."""
    resolved: dict[str, str] = {}
    for name, value in values.items():
        if isinstance(value, str):
            resolved[name] = value
        elif "$env" in value:
            variable = value["$env"]
            if variable not in os.environ:
                raise AuthRequired(
                    f"{app_id} needs the environment variable {variable} ({where}.{name}), which is not set"
                )
            resolved[name] = _secret(os.environ[variable], secrets)
        else:
            key = str(value["$keyring"])
            secret = await asyncio.to_thread(_stored, settings, key)
            if secret is None:
                raise AuthRequired(
                    f"{app_id} needs the secret '{key}' ({where}.{name}) from the gateway's secret store "
                    "(service aai-gateway), which has none of that name"
                )
            resolved[name] = _secret(secret, secrets)
    return resolved


async def _auth_headers(
    app_id: str, url: str, auth: Mapping[str, Any], settings: Settings, secrets: list[str]
) -> dict[str, str]:
    spec = auth_spec(auth)
    if spec.kind is None:
        return {}
    if spec.kind == "oauth2":
        parts = urlsplit(url)
        token = await oauth_token(settings, app_id, f"{parts.scheme}://{parts.netloc}", auth, force=False)
        return {"Authorization": f"Bearer {_secret(token.reveal(), secrets)}"}
    if spec.placement != "header":
        raise AuthConfigInvalid(f"{app_id}: an MCP server takes its {spec.noun} in a header, not the query")
    token, source = stored_token(spec, app_id, settings, os.environ)
    found = credential(spec, token, source)
    _secret(found.token.reveal(), secrets)
    return {found.name: _secret(found.value.reveal(), secrets)}


def _secret(value: str, secrets: list[str]) -> str:
    """`value`, known from now on as a secret to cut out of what the gateway writes and what the server says."""
    remember([value])
    secrets.append(value)
    return value


def _stored(settings: Settings, key: str) -> str | None:
    return open_store(settings).get(key)

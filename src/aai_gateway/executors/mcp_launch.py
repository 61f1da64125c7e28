"""An mcp binding's execution block and auth, turned into what starts or reaches its server.

Secrets are never written in a descriptor: an `env` or `headers` value, an argument in `args` or the
`url` may be `{"$env": NAME}` (the gateway's environment) or `{"$keyring": KEY}` (the gateway's secret
store, service "aai-gateway").
An HTTP server may use the web executor's auth (bearer token, API key in a header, OAuth 2 with PKCE).
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


async def launch_of(app: Descriptor, binding: Binding, settings: Settings) -> Launch:
    options, app_id = binding.options, app.app_id
    env = {k: await _value(app_id, f"execution.env.{k}", v, settings) for k, v in (options.get("env") or {}).items()}
    headers = {
        k: await _value(app_id, f"execution.headers.{k}", v, settings)
        for k, v in (options.get("headers") or {}).items()
    }
    args = [await _value(app_id, f"execution.args[{i}]", v, settings) for i, v in enumerate(options.get("args") or ())]
    url = await _value(app_id, "execution.url", options["url"], settings) if options.get("url") else None
    if url and binding.auth:
        headers.update(await _auth_headers(app_id, url, binding.auth, settings))
    return Launch(
        app_id=app_id,
        command=options.get("command"),
        args=tuple(args),
        env=env,
        cwd=options.get("cwd"),
        url=url,
        headers=headers,
        idle=settings.mcp_idle_seconds,
    )


async def _value(app_id: str, where: str, value: str | Mapping[str, str], settings: Settings) -> str:
    """A descriptor's value as the server gets it: a string as written, a reference resolved."""
    if isinstance(value, str):
        return value
    if "$env" in value:
        variable = value["$env"]
        if variable not in os.environ:
            raise AuthRequired(f"{app_id} needs the environment variable {variable} ({where}), which is not set")
        return os.environ[variable]
    key = str(value["$keyring"])
    secret = await asyncio.to_thread(_stored, settings, key)
    if secret is None:
        raise AuthRequired(
            f"{app_id} needs the secret '{key}' ({where}) from the gateway's secret store "
            "(service aai-gateway), which has none of that name"
        )
    return secret


async def _auth_headers(app_id: str, url: str, auth: Mapping[str, Any], settings: Settings) -> dict[str, str]:
    spec = auth_spec(auth)
    if spec.kind is None:
        return {}
    if spec.kind == "oauth2":
        parts = urlsplit(url)
        token = await oauth_token(settings, app_id, f"{parts.scheme}://{parts.netloc}", auth, force=False)
        return {"Authorization": f"Bearer {token.reveal()}"}
    if spec.placement != "header":
        raise AuthConfigInvalid(f"{app_id}: an MCP server takes its {spec.noun} in a header, not the query")
    token, source = stored_token(spec, app_id, settings, os.environ)
    found = credential(spec, token, source)
    return {found.name: found.value.reveal()}


def _stored(settings: Settings, key: str) -> str | None:
    return open_store(settings).get(key)

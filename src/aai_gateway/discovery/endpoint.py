"""POST JSON to an endpoint the user named in config.json (`llm.baseUrl`): `--generate --llm` asks it for
better texts, search for embeddings.

The request goes out under the address rules of web requests (`addresses.address_refusal`), with loopback
and private addresses allowed since the user named the endpoint: plain http only to a loopback address,
never the unspecified or a multicast address, no redirects, proxies from the environment ignored. The
answer is read up to a cap and within a timeout; anything else is an `EndpointFailed` saying what, in one
line.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import httpx2

from aai_gateway.config import Secret, Settings
from aai_gateway.discovery.sites import url_site
from aai_gateway.discovery.wellknown import resolve
from aai_gateway.errors import AaiError


class EndpointFailed(Exception):
    """Why the endpoint gave no usable answer, in one line."""


async def capped(response: httpx2.Response, cap: int) -> bytes | None:
    """The streamed body, or None as soon as it grows past `cap` bytes."""
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.aiter_bytes():
        total += len(chunk)
        if total > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def post_json(
    url: str,
    settings: Settings,
    body: Mapping[str, Any],
    *,
    api_key: Secret | None,
    timeout: float,
    cap: int,
    timeout_name: str = "llm.timeout",
    client: httpx2.AsyncClient | None = None,
) -> bytes:
    """POST `body` to `url`; the answer's bytes when it is HTTP 200 within `timeout` seconds and `cap` bytes.
    `client` (from `new_client`) keeps connections open between calls: a new one costs ~40 ms."""
    site = url_site(url)
    if site is None:
        raise EndpointFailed(f"{url!r} is not an http(s) URL")
    trusted = settings.with_changes(web_allow_http_loopback=True, web_allow_private_networks=True)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key.reveal()}"
    try:
        async with asyncio.timeout(timeout):
            await resolve(site, trusted)
            if client is not None:
                return await _post(client, url, headers, body, cap)
            async with new_client(timeout) as own:
                return await _post(own, url, headers, body, cap)
    except (TimeoutError, httpx2.TimeoutException):
        raise EndpointFailed(f"{url} did not answer within {timeout:g} s ({timeout_name})") from None
    except httpx2.HTTPError as exc:
        raise EndpointFailed(f"{url} failed: {exc or type(exc).__name__}") from None
    except AaiError as exc:  # the address guard's refusals, a name that does not resolve
        raise EndpointFailed(f"{url}: {exc.detail}") from None


def new_client(timeout: float) -> httpx2.AsyncClient:
    """A client as `post_json` needs it: no redirects followed, no proxies from the environment."""
    return httpx2.AsyncClient(follow_redirects=False, timeout=timeout, trust_env=False)


async def _post(
    client: httpx2.AsyncClient, url: str, headers: Mapping[str, str], body: Mapping[str, Any], cap: int
) -> bytes:
    async with client.stream("POST", url, headers=headers, content=json.dumps(body).encode()) as response:
        if response.status_code != 200:
            raise EndpointFailed(f"{url} answered HTTP {response.status_code}")
        data = await capped(response, cap)
        if data is None:
            raise EndpointFailed(f"the answer is larger than {cap // 1024} KiB")
        return data

"""Web request policy: destinations, credentials, and what responses mean. Pure functions, no network."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.config import AppSettings, Secret, Settings
from aai_gateway.errors import (
    ApiRequestFailed,
    AuthConfigInvalid,
    AuthExpired,
    AuthRequired,
    AutomationFailed,
    PermissionDenied,
)
from aai_gateway.executors.http_auth import AuthSpec, auth_spec, credential, stored_token
from aai_gateway.executors.http_guard import PLAIN_HTTP_REFUSED, check_host, check_scheme, refusal
from aai_gateway.executors.http_request import split_base
from aai_gateway.executors.http_response import (
    excerpt,
    may_retry,
    parse_output,
    retry_after,
    status_error,
)
from aai_gateway.secret_forms import redact


def settings(
    *, loopback: bool = False, private: bool = False, apps: Mapping[str, AppSettings] | None = None
) -> Settings:
    return Settings(
        scan_paths=(),
        platform="linux",
        web_allow_http_loopback=loopback,
        web_allow_private_networks=private,
        apps=apps or {},
        aai_home=Path("/home/u/.aai"),
    )


@pytest.mark.parametrize(
    ("base", "loopback", "allowed"),
    [
        ("https://api.example.com", False, True),
        ("http://api.example.com", False, False),
        ("http://api.example.com", True, False),
        ("http://127.0.0.1:8000", False, False),
        ("http://127.0.0.1:8000", True, True),
        ("http://127.9.9.9", True, True),
        ("http://[::1]:80", True, True),
        ("http://localhost:3000", True, True),
        ("http://10.0.0.1", True, False),
        ("http://[::ffff:127.0.0.1]", True, True),
    ],
)
def test_plain_http_only_to_loopback_when_allowed(base: str, loopback: bool, allowed: bool) -> None:
    if allowed:
        check_scheme(split_base(base), settings(loopback=loopback))
    else:
        with pytest.raises(ApiRequestFailed, match=PLAIN_HTTP_REFUSED):
            check_scheme(split_base(base), settings(loopback=loopback))


UNSPECIFIED = ["0.0.0.0", "::"]  # noqa: S104 (addresses to refuse, not to bind)
PUBLIC = ["93.184.216.34", "2606:4700::1111", "8.8.8.8"]
LOOPBACK = ["127.0.0.1", "127.255.0.1", "::1", "::ffff:127.0.0.1"]
PRIVATE = [
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "fc00::1",
    "fe80::1",
    "::ffff:10.0.0.1",
    "240.0.0.1",
]
NEVER = ["224.0.0.1", "ff02::1"]


@pytest.mark.parametrize("address", PUBLIC + LOOPBACK + PRIVATE + UNSPECIFIED + NEVER)
@pytest.mark.parametrize(("loopback", "private"), [(False, False), (True, False), (False, True), (True, True)])
def test_which_addresses_may_be_reached(address: str, loopback: bool, private: bool) -> None:
    reason = refusal(ipaddress.ip_address(address), settings(loopback=loopback, private=private))
    if address in PUBLIC:
        assert reason is None
    elif address in LOOPBACK:
        assert (reason is None) is loopback
    elif address in PRIVATE:
        assert (reason is None) is private
    elif address in NEVER:
        assert reason is not None
        assert "multicast" in reason
    else:
        assert reason is not None
        assert "unspecified" in reason


@pytest.mark.anyio
async def test_a_host_is_checked_by_every_address_it_resolves_to() -> None:
    await check_host(split_base("http://localhost:1/"), settings(loopback=True))
    with pytest.raises(ApiRequestFailed, match=r"localhost resolves to .*allowHttpLoopback"):
        await check_host(split_base("https://localhost/"), settings(private=True))
    with pytest.raises(ApiRequestFailed, match=r"169\.254\.169\.254, which is a link-local address"):
        await check_host(split_base("https://169.254.169.254/latest/meta-data"), settings(loopback=True))
    with pytest.raises(ApiRequestFailed, match="cannot resolve"):
        await check_host(split_base("https://no-such-host.invalid/"), settings())


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        (None, AuthSpec(None)),
        ({"type": "none"}, AuthSpec(None)),
        ({"type": "api_key", "env_var": "K"}, AuthSpec("api_key", "header", "X-API-Key", "", "K")),
        (
            {"type": "api_key", "key_name": "api_key", "key_placement": "query", "env_var": "K"},
            AuthSpec("api_key", "query", "api_key", "", "K"),
        ),
        (
            {"type": "api_key", "key_name": "Authorization", "token_prefix": "Token"},
            AuthSpec("api_key", "header", "Authorization", "Token"),
        ),
        ({"type": "bearer", "env_var": "T"}, AuthSpec("bearer", "header", "Authorization", "Bearer", "T")),
        ({"type": "bearer", "token_placement": "query"}, AuthSpec("bearer", "query", "access_token", "")),
        ({"type": "oauth2", "token_prefix": "Bearer"}, AuthSpec("oauth2", "header", "Authorization", "Bearer")),
        (
            {"type": "oauth2", "oauth2": {"token_endpoint": "x"}},
            AuthSpec("oauth2", "header", "Authorization", "Bearer"),
        ),
        (
            {"type": "apiKey", "api_key": {"key_name": "X-Key", "env_var": "K", "in": "header"}},
            AuthSpec("api_key", "header", "X-Key", "", "K"),
        ),
    ],
)
def test_auth_sections(auth: dict[str, Any] | None, expected: AuthSpec) -> None:
    assert auth_spec(auth) == expected


@pytest.mark.parametrize(
    ("auth", "says"),
    [
        ({"type": "digest"}, "not one of"),
        ({"type": "api_key", "key_placement": "cookie"}, "not header or query"),
        ({"type": "api_key", "key_name": "Bad Name"}, "not a valid header name"),
        ({"type": "api_key", "env_var": 3}, "env_var"),
    ],
)
def test_unusable_auth_sections(auth: dict[str, Any], says: str) -> None:
    with pytest.raises(AuthConfigInvalid, match=says):
        auth_spec(auth)


def test_a_key_comes_from_the_config_first_then_the_environment() -> None:
    spec = auth_spec({"type": "api_key", "env_var": "APP_KEY"})
    configured = settings(apps={"dev.x": AppSettings(api_key=Secret("from-config"))})
    token, source = stored_token(spec, "dev.x", configured, {"APP_KEY": "from-env"})
    assert (token.reveal(), source) == ("from-config", "apps.dev.x.apiKey in /home/u/.aai/config.json")
    token, source = stored_token(spec, "dev.x", settings(), {"APP_KEY": " from-env\n"})
    assert (token.reveal(), source) == ("from-env", "the environment variable APP_KEY")


def test_a_missing_key_says_how_to_provide_it() -> None:
    spec = auth_spec({"type": "bearer", "env_var": "APP_TOKEN"})
    with pytest.raises(AuthRequired) as caught:
        stored_token(spec, "dev.x", settings(), {"APP_TOKEN": "  "})
    assert caught.value.detail == (
        'dev.x needs a bearer token: set the environment variable APP_TOKEN for the gateway, or add "apps": '
        '{"dev.x": {"apiKey": {"$env": "NAME"}}} to /home/u/.aai/config.json, where NAME is an environment '
        "variable of the gateway that holds it"
    )


def test_a_key_with_a_line_break_is_refused_without_showing_it() -> None:
    spec = auth_spec({"type": "api_key", "env_var": "K"})
    with pytest.raises(AuthConfigInvalid) as caught:
        stored_token(spec, "dev.x", settings(), {"K": "sec\nret"})
    assert "sec" not in caught.value.detail


def test_credentials_stay_masked() -> None:
    made = credential(auth_spec({"type": "bearer"}), Secret("tok-123"), "somewhere")
    assert made.value.reveal() == "Bearer tok-123"
    assert "tok-123" not in repr(made)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("0", 0.0),
        ("5", 5.0),
        (" 12 ", 12.0),
        ("soon", None),
        ("-3", None),
        ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),
    ],
)
def test_retry_after(value: str | None, seconds: float | None) -> None:
    assert retry_after(value, datetime(2015, 10, 21, 7, 28, tzinfo=UTC)) == seconds


@pytest.mark.parametrize(
    ("method", "status", "retried"),
    [
        ("GET", 429, True),
        ("HEAD", 503, True),
        ("PUT", 429, True),
        ("DELETE", 503, True),
        ("POST", 429, False),
        ("PATCH", 503, False),
        ("GET", 500, False),
        ("GET", 502, False),
    ],
)
def test_only_idempotent_methods_are_retried(method: str, status: int, retried: bool) -> None:
    assert may_retry(method, status) is retried


@pytest.mark.parametrize(
    ("status", "auth", "kind", "says"),
    [
        (401, None, AuthRequired, "declares no auth"),
        (401, "api_key", AuthRequired, "GET /v1/x answered 401 Unauthorized: body; REFUSED"),
        (401, "oauth2", AuthExpired, "sign in again"),
        (403, "api_key", PermissionDenied, "GET /v1/x answered 403 Forbidden: body"),
        (404, None, ApiRequestFailed, "GET /v1/x answered 404 Not Found: body"),
        (429, None, ApiRequestFailed, "429 Too Many Requests: body"),
        (500, None, ApiRequestFailed, "500 Internal Server Error: body"),
        (302, None, ApiRequestFailed, "a redirect that was not followed"),
    ],
)
def test_status_errors(status: int, auth: str | None, kind: type[Exception], says: str) -> None:
    reasons = {401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 429: "Too Many Requests"}
    reason = reasons.get(status, {500: "Internal Server Error", 302: "Found"}.get(status, ""))
    error = status_error(status, reason, "GET /v1/x", "  body \n", auth_kind=auth, refused="REFUSED")
    assert isinstance(error, kind)
    assert says in error.detail


def test_a_retry_that_did_not_fit_says_when_to_try_again() -> None:
    error = status_error(429, "Too Many Requests", "GET /x", "", auth_kind=None, retry_in=90)
    assert error.detail == "GET /x answered 429 Too Many Requests (retry after 90 s)"


def test_bodies_are_trimmed() -> None:
    assert excerpt("a\n\n  b\tc") == "a b c"
    long = excerpt("word " * 1000)
    assert len(long) == 300
    assert long.endswith("…")


def test_redaction_reaches_every_string_and_key() -> None:
    value = {"k-SECRET": ["x SECRET y", {"n": 1, "t": "SECRETSECRET"}], "ok": None}
    assert redact(value, ["SECRET", ""]) == {
        "k-[redacted]": ["x [redacted] y", {"n": 1, "t": "[redacted][redacted]"}],
        "ok": None,
    }
    assert redact("nothing", []) == "nothing"


@pytest.mark.parametrize(
    ("body", "charset", "parser", "result"),
    [
        (b'{"a": 1}', None, None, {"a": 1}),
        (b'{"a": 1}', None, "json", {"a": 1}),
        (b'{"a": 1}', None, "text", '{"a": 1}'),
        (b"", None, None, None),
        (b"  ", None, "json", None),
        (b"plain words", None, None, "plain words"),
        ("é".encode("latin-1"), "latin-1", "text", "é"),
        ("提醒".encode(), "no-such-charset", "text", "提醒"),
    ],
)
def test_output_parsers(body: bytes, charset: str | None, parser: str | None, result: Any) -> None:
    assert parse_output(body, charset, parser, "GET /x") == result


def test_an_explicit_json_parser_refuses_other_bodies() -> None:
    with pytest.raises(AutomationFailed, match="not JSON"):
        parse_output(b"<html>", None, "json", "GET /x")

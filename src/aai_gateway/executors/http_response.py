"""What an HTTP response means for the agent: a result, a retry, or an error. Pure functions.

Error details quote the status and a trimmed body, never the query string (it may carry a key); the
executor redacts every secret the request used from anything returned (`secret_forms.redact`).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from aai_gateway.errors import AaiError, ApiRequestFailed, AuthExpired, AuthRequired, AutomationFailed, PermissionDenied
from aai_gateway.http_methods import IDEMPOTENT

RETRY_STATUSES = frozenset({429, 503})
BODY_EXCERPT = 300


def retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delay seconds or an HTTP date), or None."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def may_retry(method: str, status: int) -> bool:
    return status in RETRY_STATUSES and method in IDEMPOTENT


def excerpt(body: str, limit: int = BODY_EXCERPT) -> str:
    text = re.sub(r"\s+", " ", body).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_error(
    status: int,
    reason: str,
    request: str,
    body: str,
    *,
    auth_kind: str | None,
    refused: str = "",
    retry_in: float | None = None,
) -> AaiError:
    """The error for a response with a status of 300 or more. `body` must already be redacted;
    `refused` says which credential a 401 turned down and how to replace it."""
    said = f"{request} answered {status} {reason}".rstrip()
    text = excerpt(body)
    said_body = f"{said}: {text}" if text else said
    if status == 401:
        if auth_kind == "oauth2":
            return AuthExpired(f"{said_body}; the sign-in was refused even after a refresh, sign in again")
        if auth_kind is None:
            return AuthRequired(f"{said_body}; the descriptor declares no auth for this API")
        return AuthRequired(f"{said_body}; {refused}")
    if status == 403:
        return PermissionDenied(said_body)
    if status in RETRY_STATUSES and retry_in is not None:
        return ApiRequestFailed(f"{said_body} (retry after {retry_in:g} s)")
    if 300 <= status < 400:
        return ApiRequestFailed(f"{said} (a redirect that was not followed)")
    return ApiRequestFailed(said_body)


def parse_output(body: bytes, charset: str | None, parser: str | None, request: str) -> Any:
    """`text` gives the body as text; `json` (the default) parses it, and without an explicit
    `output_parser` a body that is not JSON comes back as text."""
    try:
        text = body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    if parser in ("text", "string"):
        return text
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if parser is None:
            return text
        raise AutomationFailed(
            f"{request} answered with a body that is not JSON (output_parser is json): {exc.msg} at column {exc.colno}"
        ) from None

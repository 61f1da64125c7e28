"""The JSON envelope shapes B and C exchange with an app, whatever carries it (DBus, Apple Events, COM).

Request `{version, tool, params, request_id}`; response `{status, result | error}`, where an error may
name one of the gateway's error types or codes and keeps it.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from aai_gateway.errors import ALL_ERRORS, AutomationFailed
from aai_gateway.executors.base import ToolCall

ERRORS_BY_TYPE = {e.type: e for e in ALL_ERRORS}
ERRORS_BY_CODE = {e.code: e for e in ALL_ERRORS}


def request(call: ToolCall) -> str:
    """The request as one JSON string; the arguments travel as JSON data, never as code."""
    body = {"version": "1.0", "tool": call.tool.name, "params": dict(call.args), "request_id": uuid.uuid4().hex}
    return json.dumps(body, ensure_ascii=False)


def response(answer: Any, where: str) -> Any:
    """The result of an app's answer, or the error it reports raised as an `AaiError`."""
    try:
        parsed = json.loads(answer) if isinstance(answer, str) else None
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict) or "status" not in parsed:
        raise AutomationFailed(f"{where} did not answer with a JSON envelope {{status, result | error}}")
    if parsed["status"] != "error":
        return parsed.get("result")
    error = parsed.get("error")
    if not isinstance(error, dict):
        return _raise(None, None, str(error or "the app reported an error"))
    return _raise(error.get("type"), error.get("code"), str(error.get("message") or error))


def _raise(kind: Any, code: Any, message: str) -> Any:
    cls = ERRORS_BY_TYPE.get(kind) if isinstance(kind, str) else None
    cls = cls or (ERRORS_BY_CODE.get(code) if isinstance(code, int) else None) or AutomationFailed
    raise cls(message)

"""Every form of a secret is cut out of text: as sent, percent-encoded, JSON-escaped, base64."""

from __future__ import annotations

import base64
import json
import logging
import uuid
from urllib.parse import quote, quote_plus

import pytest

from aai_gateway.history.redact import Redactor
from aai_gateway.logs import OnceFormatter
from aai_gateway.secret_forms import redact, remember

KEY = 'a+b/c=d%e"f\\g'
BASIC = "Basic " + base64.b64encode(f"user:{KEY}".encode()).decode()
FORMS = [
    KEY,
    quote(KEY),
    quote(KEY, safe=""),
    quote_plus(KEY),
    "a%2bb%2fc%3dd%25e%22f%5cg",
    json.dumps(KEY)[1:-1],
    json.dumps(KEY, ensure_ascii=True)[1:-1],
    json.dumps(json.dumps(KEY)[1:-1])[1:-1],
    base64.b64encode(KEY.encode()).decode(),
]


@pytest.mark.hostile("redaction")
@pytest.mark.parametrize("form", FORMS)
def test_each_form_of_a_key_is_cut(form: str) -> None:
    text = f"GET /v1/echo?api_key={form}&x=1"
    assert Redactor([KEY]).text(text) == "GET /v1/echo?api_key=[redacted]&x=1"
    assert redact({"query": text}, [KEY]) == {"query": "GET /v1/echo?api_key=[redacted]&x=1"}


@pytest.mark.hostile("redaction")
@pytest.mark.parametrize("form", [f"user:{KEY}", KEY, quote(f"user:{KEY}", safe=""), BASIC.split()[1]])
def test_basic_auth_is_cut_encoded_and_decoded(form: str) -> None:
    assert form not in Redactor([BASIC]).text(f"seen {form} here")


def test_a_short_value_is_not_cut() -> None:
    assert Redactor(["abc"]).text("abc abc") == "abc abc"


@pytest.mark.hostile("redaction")
def test_a_remembered_secret_is_cut_from_the_history_and_the_log() -> None:
    secret = f'remembered-{uuid.uuid4().hex}"\\'  # a traceback shows it as its repr, `\\` doubled
    redactor = Redactor(["configured-key"])
    formatter = OnceFormatter("%(message)s")
    text = f"key {secret} as sent, {base64.b64encode(secret.encode()).decode()} as base64"

    def line() -> str:
        return formatter.format(logging.LogRecord("aai_gateway", logging.INFO, "", 0, text, None, None))

    assert secret in redactor.text(text)
    assert secret in line()
    remember([secret])
    assert redactor.text(text) == "key [redacted] as sent, [redacted] as base64"
    assert line() == "key [redacted] as sent, [redacted] as base64"
    quoted = logging.LogRecord("mcp", logging.WARNING, "", 0, "input_value=%r", (secret,), None)
    assert formatter.format(quoted) == "input_value='[redacted]'"

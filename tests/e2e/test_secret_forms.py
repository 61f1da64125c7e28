"""A secret is redacted in every form it travels in, wherever the gateway shows or keeps what came back.

The key holds `+ / = % " \\`: sent in a query string it comes back percent-encoded when the API echoes
the URL, inside JSON it comes back escaped, and as basic auth it travels as base64 of `user:key`.
The test API (tests/apps/rest_server.py) echoes each request, and quotes a refused credential.
"""

from __future__ import annotations

import base64
import json
import subprocess
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from tests.e2e.mcp_client import error_of, text_of
from tests.e2e.test_rest import SHAPE_A, Home, gateway, home, rest_server  # noqa: F401 (fixtures)
from tests.support import gateway_command

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

KEY = 'a+b/c=d%e"f\\g'
PAIR = f"user:{KEY}"
BASIC = base64.b64encode(PAIR.encode()).decode()


def leaked_forms() -> dict[str, str]:
    """Each form of the key (and of basic auth's pair), by the way it was made."""
    forms: dict[str, str] = {}
    for label, text in (("key", KEY), ("pair", PAIR)):
        made = {
            "as sent": text,
            "quote": quote(text),
            "quote safe=''": quote(text, safe=""),
            "quote_plus": quote_plus(text),
            "JSON": json.dumps(text)[1:-1],
            "JSON twice": json.dumps(json.dumps(text)[1:-1])[1:-1],
        }
        forms.update({f"{label} {how}": form for how, form in made.items()})
        forms[f"{label} base64"] = base64.b64encode(text.encode()).decode()
    forms["basic token"] = BASIC
    return forms


def lower_hex(form: str) -> str:
    out, i = [], 0
    while i < len(form):
        if form[i] == "%":
            out.append(form[i : i + 3].lower())
            i += 3
        else:
            out.append(form[i])
            i += 1
    return "".join(out)


def found_in(text: str) -> list[str]:
    forms = leaked_forms()
    forms |= {f"{name} (lower hex)": lower_hex(form) for name, form in forms.items() if "%" in form}
    return [name for name, form in forms.items() if form in text]


def cli(at: Home, *args: str) -> str:
    out = subprocess.run(
        [gateway_command(), *args], env=at.env(FORM_KEY=KEY), capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout + out.stderr


@pytest.mark.hostile("redaction")
@pytest.mark.parametrize("placement", ["query", "header", "basic", "query from config.json"])
async def test_a_key_is_redacted_in_every_form(home: Home, placement: str) -> None:  # noqa: F811
    auth: dict[str, Any] = {
        "query": {"type": "api_key", "key_name": "api_key", "key_placement": "query", "env_var": "FORM_KEY"},
        "header": {"type": "api_key", "env_var": "FORM_KEY"},
        "basic": {"type": "api_key", "key_name": "Authorization", "token_prefix": "Basic", "env_var": "FORM_BASIC"},
        "query from config.json": {"type": "api_key", "key_name": "api_key", "key_placement": "query"},
    }[placement]
    app = home.install(SHAPE_A, "dev.aai.forms", auth)
    home.config.update(logLevel="debug")
    if placement.endswith("config.json"):
        home.config["apps"] = {app: {"apiKey": {"$env": "FORM_KEY"}}}
    kind = {"query": "query", "header": "header", "basic": "bearer"}[placement.split(maxsplit=1)[0]]
    replies: list[str] = []
    async with gateway(home, FORM_KEY=KEY, FORM_BASIC=BASIC) as session:
        echoed = text_of(await session.call_tool("aai_exec", {"app": app, "tool": "echo", "args": {"segment": "s"}}))
        replies.append(echoed)
        assert "[redacted]" in echoed
        # the API refuses the key (it expects another) and quotes it, JSON-escaped, in its answer
        error = await error_of(session, "aai_exec", {"app": app, "tool": "secure", "args": {"kind": kind}})
        replies.append(json.dumps(error.model_dump(), ensure_ascii=False))
        assert isinstance(error.data, dict)
        assert error.data["type"] == "AUTH_REQUIRED"
        assert "[redacted]" in error.data["detail"]
    assert found_in("\n".join(replies)) == []
    assert found_in(home.written()) == []
    stored = b"".join(p.read_bytes() for p in home.aai.glob("history.db*"))
    assert found_in(stored.decode("utf-8", errors="replace")) == []
    records = json.loads(cli(home, "history", "--json"))
    assert len(records) == 2
    assert found_in(json.dumps(records)) == []
    assert found_in(json.dumps(records, ensure_ascii=False)) == []
    for record in records:
        assert found_in(cli(home, "history", "show", record["id"])) == []

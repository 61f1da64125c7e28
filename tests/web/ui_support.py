"""A gateway over a temporary AAI home with hostile descriptors, and its UI mounted at /ui."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from aai_gateway.config import load_settings
from aai_gateway.history import Record
from aai_gateway.service import Gateway
from aai_gateway.web import TOKEN_FILE, UI_PATH, Access, build_ui

HOST = "127.0.0.1"
PORT = 4321
ORIGIN = f"http://{HOST}:{PORT}"
SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(2)>'
HOSTILE = SCRIPT + IMG
XSS_APP = "dev.aai.xss"
BROKEN_APP = "dev.aai.broken"


def hostile_descriptor() -> dict[str, Any]:
    return {
        "schema_version": "1.0",
        "appId": XSS_APP,
        "name": f"Evil {HOSTILE}",
        "description": f"Describes {HOSTILE}",
        "version": "1.0.0",
        "platforms": {
            "linux": {
                "automation": "dbus",
                "service": "dev.aai.Echo",
                "object": "/dev/aai/Echo",
                "interface": "dev.aai.Echo",
                "tools": [
                    {
                        "name": "echo",
                        "description": f"Tool {HOSTILE}",
                        "parameters": {
                            "type": "object",
                            "properties": {"text": {"type": "string", "description": f"Param {HOSTILE}"}},
                            "required": ["text"],
                        },
                        "method": "Echo",
                        "output_parser": "string",
                    }
                ],
            }
        },
    }


def write_home(home: Path) -> Path:
    """An AAI home holding the hostile descriptor and an invalid one whose problems quote hostile text."""
    aai = home / ".aai"
    (aai / XSS_APP).mkdir(parents=True)
    (aai / XSS_APP / "aai.json").write_text(json.dumps(hostile_descriptor()))
    (aai / BROKEN_APP).mkdir()
    (aai / BROKEN_APP / "aai.json").write_text(json.dumps({"appId": BROKEN_APP, "name": HOSTILE}))
    return aai


def hostile_record(call_id: str = "abc123def456") -> Record:
    return Record(
        call_id=call_id,
        time=datetime.now(UTC),
        caller=f"agent {HOSTILE}",
        transport="http",
        app=XSS_APP,
        tool="echo",
        args={"text": HOSTILE},
        status="error",
        duration_ms=1.5,
        error_code=-32001,
        error_type="AUTOMATION_FAILED",
        error_detail=f"failed {HOSTILE}",
    )


@dataclass
class Ui:
    client: TestClient
    access: Access
    gateway: Gateway
    token_file: Path

    def login(self) -> str:
        """Log in with the current token; returns the page's CSRF token."""
        answer = self.client.get(f"{UI_PATH}/login", params={"token": self.access.token}, follow_redirects=False)
        assert answer.status_code == 303, answer.text
        return self.csrf()

    def csrf(self) -> str:
        page = self.client.get(f"{UI_PATH}/settings")
        assert page.status_code == 200, page.text
        marker = 'name="csrf" value="'
        start = page.text.index(marker) + len(marker)
        return page.text[start : page.text.index('"', start)]


def make_ui(home: Path) -> Iterator[Ui]:
    aai = write_home(home)
    settings = load_settings({"HOME": str(home), "AAI_PLATFORM": "linux"})
    gateway = Gateway(settings)
    gateway.history.submit(hostile_record()).result(10)
    gateway.consent.store.ask_later(f"agent {HOSTILE}", XSS_APP, "echo", (("text", HOSTILE),), "http")
    access = Access(token_file=aai / TOKEN_FILE)
    app = Starlette(routes=[Mount(UI_PATH, app=build_ui(gateway, access, HOST, PORT))])
    with TestClient(app, base_url=f"http://{HOST}:{PORT}") as client:
        yield Ui(client, access, gateway, aai / TOKEN_FILE)
    gateway.history.close()

"""An MCP server from a store or a URL starts only once the user approved its exact command line.

A store is served from a loopback HTTP server; its entry is the hostile test server, whose `startFile`
proves whether it was ever started. Everything runs through the installed `aai-gateway`: `install`, the
real SDK client over stdio (with and without elicitation), `consent allow-server`, `import`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from aai_gateway.web import UI_PATH
from tests.e2e.mcp_client import Consenter, error_of, stdio_session, text_of
from tests.library.test_store import served
from tests.mcpservers.servers import alive, descriptor, hostile
from tests.mcpservers.test_mcp_apps import exec_
from tests.support import gateway_command, until
from tests.web.ui_support import make_ui

pytestmark = pytest.mark.anyio

APP = "mcp.fromstore"
GUIDE = "app_mcp_fromstore"
APPROVE = f"aai-gateway consent allow-server {APP}"


@dataclass
class Setup:
    tmp: Path
    store: Path
    url: str
    started: Path
    """written by the server when it starts"""

    @property
    def home(self) -> Path:
        return self.tmp / "home"

    @property
    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"}

    def entry(self, *extra: str, version: str = "1.0.0") -> dict[str, Any]:
        """The store's MCP server: the hostile server, with an odd environment and `extra` arguments."""
        plan = {"startFile": str(self.started), "calls": {"echo": [{"echo": True}]}}
        execution = hostile(self.tmp / "plan.json", plan, LD_LIBRARY_PATH="/nonexistent", API_TOKEN="s3cr3t-v4lue")
        execution["args"] += list(extra)
        doc = descriptor(APP, execution)
        doc["version"] = version
        return doc

    def publish(self, doc: dict[str, Any]) -> None:
        data = json.dumps(doc).encode()
        target = self.store / "apps" / APP / "aai.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        entry = {
            "id": APP,
            "names": {"en": "From the store"},
            "description": "An MCP server a store lists.",
            "version": doc["version"],
            "descriptorUrl": f"apps/{APP}/aai.json",
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        index = {"store": {"name": "Test store", "formatVersion": 1}, "entries": [entry]}
        (self.store / "index.json").write_text(json.dumps(index))

    def cli(self, *args: str, answer: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [gateway_command(), *args],
            env=self.env,
            input=answer,
            stdin=None if answer is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def install(self, what: str = APP) -> str:
        done = self.cli("install", what)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def session(self, consent: Any = None) -> Any:
        return stdio_session(self.env, self.tmp / "gateway.log", consent=consent)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    store = tmp_path / "store"
    store.mkdir()
    with served(store) as url:
        made = Setup(tmp_path, store, url, tmp_path / "started")
        (made.home / ".aai").mkdir(parents=True)
        config = {"storeUrls": [f"{url}/index.json"], "web": {"allowHttpLoopback": True}, "consent": {"default": "ask"}}
        (made.home / ".aai" / "config.json").write_text(json.dumps(config))
        made.publish(made.entry())
        yield made


async def refused(setup: Setup, kind: str) -> str:
    """Ask for the guide and call a tool without elicitation: both CONSENT_REQUIRED, the server not started."""
    async with setup.session() as session:
        guide = await error_of(session, GUIDE, {})
        call = await error_of(session, "aai_exec", {"app": APP, "tool": "echo", "args": {}})
    for error in (guide, call):
        assert error.data is not None
        assert error.data["type"] == kind, error
    assert not setup.started.exists(), "the server was started"
    return str(guide.data["detail"]) if guide.data else ""


@pytest.mark.hostile("store")
@pytest.mark.parametrize("how", ["store", "url"])
async def test_a_server_from_a_store_or_url_shows_its_command_and_does_not_start_unapproved(
    setup: Setup, how: str
) -> None:
    said = setup.install(APP if how == "store" else f"{setup.url}/apps/{APP}/aai.json")
    assert f"program: {sys.executable}" in said, said
    assert "hostile_server.py" in said, said
    assert "LD_LIBRARY_PATH=/nonexistent" in said, said
    assert "API_TOKEN=[redacted]" in said, said
    assert "s3cr3t" not in said, said
    assert "will not see it" not in said, said
    assert APPROVE in said, said
    detail = await refused(setup, "CONSENT_REQUIRED")
    assert APPROVE in detail, detail
    assert "no MCP elicitation" in detail, detail


@pytest.mark.hostile("store")
async def test_a_client_that_can_ask_gets_one_question_showing_the_command_line(setup: Setup) -> None:
    setup.install()
    declining = Consenter("decline")
    async with setup.session(declining) as session:
        error = await error_of(session, GUIDE, {})
    assert error.data is not None
    assert error.data["type"] == "PERMISSION_DENIED", error
    assert not setup.started.exists(), "the server was started though the user declined"
    [asked] = declining.messages
    for shown in (sys.executable, "hostile_server.py", "LD_LIBRARY_PATH=/nonexistent", "API_TOKEN=[redacted]"):
        assert shown in asked, asked
    assert "s3cr3t" not in asked, asked
    approving = Consenter("app")
    async with setup.session(approving) as session:
        assert "echo" in text_of(await session.call_tool(GUIDE, {}))
        assert setup.started.exists()
        echoed = await exec_(session, APP, "echo", {"x": 1})
        assert json.loads(text_of(echoed)) == {"x": 1}
    # one question about the command line, then (consent.default "ask") one about the tool
    assert len(approving.messages) == 2, approving.messages
    assert "hostile_server.py" in approving.messages[0]
    setup.started.unlink()
    later = Consenter("app")
    async with setup.session(later) as session:
        assert "echo" in text_of(await session.call_tool(GUIDE, {}))
    assert later.messages == [], "the approved command line was asked about again"


@pytest.mark.hostile("store")
async def test_the_cli_shows_the_command_line_approves_it_and_revokes_it(setup: Setup) -> None:
    setup.install()
    no = setup.cli("consent", "allow-server", APP, answer="n\n")
    assert no.returncode == 1, no
    assert "hostile_server.py" in no.stdout, no.stdout
    await refused(setup, "CONSENT_REQUIRED")
    yes = setup.cli("consent", "allow-server", APP, "--yes")
    assert yes.returncode == 0, yes.stderr
    assert f"program: {sys.executable}" in yes.stdout, yes.stdout
    listed = setup.cli("consent", "list")
    assert APP in listed.stdout.split("Approved MCP server command lines", 1)[1], listed.stdout
    async with setup.session() as session:
        assert "echo" in text_of(await session.call_tool(GUIDE, {}))
        pid = int(setup.started.read_text())
        assert setup.cli("consent", "allow", APP).returncode == 0  # the tools: only the server is in question
        assert json.loads(text_of(await exec_(session, APP, "echo", {"x": 1}))) == {"x": 1}
        revoked = setup.cli("consent", "revoke", APP, "--server")
        assert revoked.returncode == 0, revoked.stderr
        error = await error_of(session, "aai_exec", {"app": APP, "tool": "echo", "args": {}})
        assert error.data is not None
        assert error.data["type"] == "CONSENT_REQUIRED", error
        assert APPROVE in error.data["detail"], error
        await until(lambda: not alive(pid), 10, "the server whose approval was revoked to stop")
    setup.started.unlink()
    await refused(setup, "CONSENT_REQUIRED")


@pytest.mark.hostile("store")
async def test_an_update_that_changes_the_command_line_is_asked_again(setup: Setup) -> None:
    setup.install()
    assert setup.cli("consent", "allow-server", APP, "--yes").returncode == 0
    setup.publish(setup.entry("--extra-argument", version="1.1.0"))
    said = setup.install()
    assert "Updated" in said, said
    assert "--extra-argument" in said, said
    assert APPROVE in said, said
    await refused(setup, "CONSENT_REQUIRED")
    asked = Consenter("app")
    async with setup.session(asked) as session:
        assert "echo" in text_of(await session.call_tool(GUIDE, {}))
    assert setup.started.exists()
    [question] = asked.messages
    assert "--extra-argument" in question, question


def test_update_shows_a_changed_command_line_and_how_to_approve_it(setup: Setup) -> None:
    setup.install()
    assert setup.cli("consent", "allow-server", APP, "--yes").returncode == 0
    setup.publish(setup.entry("--another-argument", version="1.2.0"))
    done = setup.cli("update", APP)
    assert done.returncode == 0, done.stderr
    assert f"Updated {APP} from 1.0.0 to 1.2.0" in done.stdout
    assert "--another-argument" in done.stdout
    assert APPROVE in done.stdout


async def test_a_descriptor_the_user_wrote_runs_without_a_question(setup: Setup) -> None:
    folder = setup.home / ".aai" / APP
    folder.mkdir()
    (folder / "aai.json").write_text(json.dumps(setup.entry()))
    async with setup.session() as session:
        assert "echo" in text_of(await session.call_tool(GUIDE, {}))
    assert setup.started.exists()


async def test_an_imported_server_runs_without_a_question_even_over_a_stores(setup: Setup) -> None:
    setup.install()  # the store's descriptor first: the import replaces it
    execution = setup.entry()["execution"]
    servers = {"fromstore": {"command": execution["command"], "args": execution["args"]}}
    listing = setup.tmp / "claude_desktop_config.json"
    listing.write_text(json.dumps({"mcpServers": servers}))
    dry = setup.cli("import", str(listing), "--from", "claude-desktop", "--secrets", "env")
    assert "hostile_server.py" in dry.stdout, dry.stdout
    done = setup.cli("import", str(listing), "--from", "claude-desktop", "--secrets", "env", "--write", "--force")
    assert done.returncode == 0, done.stdout + done.stderr
    async with setup.session() as session:
        assert "echo" in text_of(await session.call_tool(GUIDE, {}))
    assert setup.started.exists()


@pytest.mark.hostile("store")
def test_the_ui_shows_the_waiting_server_and_approves_what_it_showed(setup: Setup) -> None:
    setup.install()
    with contextlib.contextmanager(make_ui)(setup.home) as ui:
        ui.login()
        page = unescape(ui.client.get(f"{UI_PATH}/apps/{APP}").text)
        assert APPROVE in page, "the app page does not say how to approve the server"
        assert not setup.started.exists(), "visiting the app's page started the server"
        consent = unescape(ui.client.get(f"{UI_PATH}/consent").text)
        assert "hostile_server.py" in consent
        assert "LD_LIBRARY_PATH=/nonexistent" in consent
        assert "s3cr3t" not in consent
        form = ui.client.get(f"{UI_PATH}/consent").text
        fingerprint = form.split('name="fingerprint" value="', 1)[1].split('"', 1)[0]
        csrf = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        stale = ui.client.post(f"{UI_PATH}/consent/server", data={"csrf": csrf, "app": APP, "fingerprint": "0" * 64})
        assert stale.status_code == 409
        approved = ui.client.post(
            f"{UI_PATH}/consent/server", data={"csrf": csrf, "app": APP, "fingerprint": fingerprint}
        )
        assert approved.status_code == 200, approved.text
        page = unescape(ui.client.get(f"{UI_PATH}/apps/{APP}").text)
        assert "<code>echo</code>" in page
        assert setup.started.exists()
        (approval,) = ui.gateway.consent.store.servers()
        assert f'name="grant" value="{approval.id}"' in ui.client.get(f"{UI_PATH}/consent").text
        revoked = ui.client.post(f"{UI_PATH}/consent/revoke", data={"csrf": csrf, "grant": approval.id})
        assert "Revoked the approval" in revoked.text
        assert ui.gateway.consent.store.servers() == ()
        assert ui.client.portal is not None
        ui.client.portal.call(ui.gateway.aclose)

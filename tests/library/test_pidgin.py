"""The Pidgin entry against Pidgin under Xvfb, on a private bus, with a fresh profile holding one disabled account.

A status change is checked in what Pidgin itself saves (status.xml in its profile) besides its status in use.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session
from tests.e2e.test_dunst import free_display
from tests.library.apps import desktop_env, started
from tests.library.library_gateway import Exec, gateway_env, read_only_tools
from tests.support import Bus, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

APP = "im.pidgin.pidgin"
USER = "ada@example.org/desk"
ACCOUNTS = f"""<?xml version='1.0' encoding='UTF-8' ?>
<account version='1.0'>
 <account>
  <protocol>prpl-jabber</protocol>
  <name>{USER}</name>
  <settings ui='gtk-gaim'><setting name='auto-login' type='bool'>0</setting></settings>
 </account>
</account>
"""


@pytest.fixture(scope="module")
def profile(library_bus: Bus, workdir: Path) -> Iterator[Path]:
    """Pidgin running with a fresh profile folder (its `-c`), which it saves its state to."""
    folder = workdir / "purple"
    folder.mkdir()
    (folder / "accounts.xml").write_text(ACCOUNTS)
    with free_display(workdir) as display:
        env = desktop_env(library_bus, workdir / "home", display)
        argv = ["pidgin", "--config", str(folder), "--nologin"]
        with started(argv, env, workdir / "pidgin.log", library_bus, ["im.pidgin.purple.PurpleService"]):
            yield folder


async def test_pidgin_accounts_and_status(library_bus: Bus, profile: Path, workdir: Path) -> None:
    async with stdio_session(
        gateway_env(library_bus, workdir / "gateway-home", APP), workdir / "stderr.log"
    ) as session:
        run = Exec(session, APP)
        [account] = await run("accounts")
        assert await run("account_username", account=account) == USER
        assert await run("account_protocol", account=account) == "XMPP"
        assert await run("account_enabled", account=account) == 0
        assert await run("account_connected", account=account) == 0
        assert await run("buddies", account=account) == []
        assert await run("conversations") == []
        assert await run("find_status", title="Lunch") == 0

        lunch = await run("create_status", title="Lunch", kind=5)
        assert isinstance(lunch, int)
        assert lunch > 0
        await run("set_status_message", status=lunch, message="Out for lunch, back at 2")
        await run("activate_status", status=lunch)
        assert await run("current_status") == lunch
        saved = profile / "status.xml"
        wait_until(lambda: saved.exists() and "Out for lunch, back at 2" in saved.read_text(), 15, "status.xml")
        assert "<status name='Lunch'" in saved.read_text()

        answers = {}
        for tool in read_only_tools(APP):
            if tool in ("status_title", "status_kind", "status_message"):
                answers[tool] = await run(tool, status=lunch)
            elif tool.startswith(("account_", "buddies")):
                answers[tool] = await run(tool, account=account)
            elif tool == "find_status":
                answers[tool] = await run(tool, title="Lunch")
            elif tool == "conversation_title":
                continue  # needs an open conversation, and nothing can connect here to open one
            else:
                answers[tool] = await run(tool)
        assert (answers["status_title"], answers["status_kind"]) == ("Lunch", 5)
        assert answers["status_message"] == "Out for lunch, back at 2"
        assert answers["find_status"] == answers["current_status"] == lunch
        assert lunch in answers["saved_statuses"]
        kind, _ = await run.error("conversation_title", conversation=1)
        assert kind == "AUTOMATION_FAILED"  # Pidgin refuses a handle that is not a conversation

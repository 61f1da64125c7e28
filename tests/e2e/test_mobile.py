"""Android intents and iOS URL schemes are read and checked; calling one answers
AUTOMATION_NOT_SUPPORTED naming the automation type and the platform."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.support import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SEED_MAIL = ROOT / "tests" / "golden" / "seeds" / "seed003-mail-multi.json"


@pytest.mark.parametrize(("platform", "automation"), [("android", "intent"), ("ios", "url scheme")])
async def test_mobile_tools_are_listed_but_not_run(tmp_path: Path, platform: str, automation: str) -> None:
    home = tmp_path / "home"
    target = home / ".aai" / "com.apple.mail"
    target.mkdir(parents=True)
    (target / "aai.json").write_bytes(SEED_MAIL.read_bytes())
    env = {"HOME": str(home), "AAI_PLATFORM": platform}
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        guide = text_of(await session.call_tool("app_com_apple_mail", {}))
        assert "send_email" in guide
        arguments = {"to": "a@example.com", "subject": "s", "body": "b"}
        error = await error_of(session, "aai_exec", {"app": "com.apple.mail", "tool": "send_email", "args": arguments})
    assert (error.code, error.data["type"]) == (-32006, "AUTOMATION_NOT_SUPPORTED")
    assert automation in error.message.lower()
    assert platform in error.message

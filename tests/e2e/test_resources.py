"""resources/list and resources/read agree on what a descriptor is, through the SDK client over stdio."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.mcp_client import stdio_session
from tests.support import EXAMPLES, install_descriptor

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_read_gives_the_mime_type_the_listing_gives(tmp_path: Path) -> None:
    home = tmp_path / "home"
    source = EXAMPLES / "com.github.api" / "aai.json"
    install_descriptor(home / ".aai", source)
    env = {"HOME": str(home), "AAI_PLATFORM": "linux"}
    async with stdio_session(env, tmp_path / "stderr.log") as session:
        [listed] = (await session.list_resources()).resources
        [content] = (await session.read_resource(str(listed.uri))).contents
    assert listed.mime_type == "application/aai+json"
    assert content.mime_type == listed.mime_type
    assert json.loads(getattr(content, "text", "")) == json.loads(source.read_text())

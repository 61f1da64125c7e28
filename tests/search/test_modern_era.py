"""`aai_search` and `aai_install` for a client of the 2026-07-28 revision: each request stands alone,
with the protocol version, client and capabilities in its `_meta`, over stdio."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.raw_client import spawn
from tests.e2e.test_lone_surrogates import answer_to

pytestmark = pytest.mark.anyio

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "modern-client", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def call(request_id: int, name: str, arguments: dict[str, Any]) -> bytes:
    params = {"name": name, "arguments": arguments, "_meta": MODERN}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


async def test_search_and_an_install_that_cannot_ask_in_the_2026_era(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".aai").mkdir(parents=True)
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}}))
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux"}
    client = await spawn(env, tmp_path / "stderr.log")
    try:
        found = await answer_to(client, 1, call(1, "aai_search", {"query": "Musik anhalten"}))
        results = found["result"]["structuredContent"]["results"]
        assert (results[0]["app"]["id"], results[0]["tool"]) == ("org.mpris.mediaplayer2", "pause")
        refused = await answer_to(client, 2, call(2, "aai_install", {"app": "org.mpris.mediaplayer2"}))
        assert refused["result"]["isError"] is True
        error = refused["result"]["structuredContent"]["error"]
        assert error["type"] == "CONSENT_REQUIRED"
        assert "`aai-gateway install org.mpris.mediaplayer2`" in error["detail"]
    finally:
        await client.aclose()
    assert not (home / ".aai" / "org.mpris.mediaplayer2").exists()

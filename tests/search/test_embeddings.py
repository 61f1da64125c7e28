"""`search.embeddings` for real: the installed gateway over stdio, and a local OpenAI-compatible `/v1/embeddings`
(http.server, in a thread) whose vectors come from hashed words, with a few words it takes as one ("espresso"
is "coffee"), answering as the configured `llm.embeddingModel` asks: well, slowly, hugely, or with garbage."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import suppress
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
from mcp.client.session import ClientSession

from tests.e2e.mcp_client import stdio_session
from tests.support import served

pytestmark = pytest.mark.anyio

DIMS = 512
SAME = {"espresso": "coffee", "latte": "coffee"}
"""Words the fake model takes for others: what meaning finds and words alone cannot."""
KEY = "sk-embeddings-test"
SLOW = 3.0
WAIT = 60.0
"""Seconds a test waits at most for the operations to be embedded in the background."""


def vector(text: str) -> list[float]:
    words = [SAME.get(w, w) for w in re.findall(r"[a-z]+", text.lower())]
    out = [0.0] * DIMS
    for word in words:
        out[int(hashlib.sha256(word.encode()).hexdigest()[:8], 16) % DIMS] += 1.0
    if not words:
        out[0] = 1.0
    return out


class Embeddings(BaseHTTPRequestHandler):
    """POST /v1/embeddings, answering as the request's model names."""

    inputs: ClassVar[list[tuple[str, str]]] = []
    """(model, input) of every text asked for."""
    auth: ClassVar[set[str | None]] = set()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        model, texts = body["model"], body["input"]
        Embeddings.inputs.extend((model, text) for text in texts)
        Embeddings.auth.add(self.headers.get("Authorization"))
        if self.path != "/v1/embeddings":
            self.answer(404, b"{}")
            return
        if model == "slow" or (model == "slow-query" and len(texts) == 1):
            time.sleep(SLOW)
        vectors = [vector(text) for text in texts]
        if model == "nan":
            vectors[0][0] = float("nan")  # json.dumps writes NaN, which json.loads reads
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        answer = json.dumps({"object": "list", "data": data}).encode()
        if model == "huge":  # 10 MB: far more than 64 vectors of 4,096 numbers take
            answer = b'{"data": [{"index": 0, "embedding": [' + b"0.5, " * 2_000_000 + b"0.5]}]}"
        elif model == "garbage":
            answer = b"<html>not today</html>"
        elif model == "short":
            answer = json.dumps({"data": data[:-1]}).encode()
        self.answer(200, answer)

    def answer(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with suppress(BrokenPipeError, ConnectionResetError):  # a client that gave up
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with served(Embeddings) as base:
        yield f"{base}/v1"


def coffee_home(tmp_path: Path, base_url: str, model: str, **llm: Any) -> Path:
    """An AAI home with a coffee machine's app installed and search.embeddings on."""
    home = tmp_path / "home"
    app = home / ".aai" / "dev.aai.coffee"
    app.mkdir(parents=True)
    descriptor = {
        "schemaVersion": "1.0",
        "version": "1.0.0",
        "platform": "web",
        "app": {"id": "dev.aai.coffee", "name": {"en": "Coffee machine"}, "description": "The office machine"},
        "execution": {"type": "http", "baseUrl": "https://coffee.invalid"},
        "tools": [
            {
                "name": "brew_coffee",
                "description": "Brew a cup of coffee.",
                "parameters": {"type": "object", "properties": {}},
                "execution": {"path": "/brew", "method": "POST"},
            }
        ],
    }
    (app / "aai.json").write_text(json.dumps(descriptor))
    llm_config = {"baseUrl": base_url, "model": "chat", "embeddingModel": model, "apiKey": {"$env": "AAI_KEY"}, **llm}
    config = {"search": {"embeddings": True}, "llm": llm_config}
    (home / ".aai" / "config.json").write_text(json.dumps(config))
    return home


def env_of(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ["PATH"], "AAI_PLATFORM": "linux", "AAI_KEY": KEY}


async def first_hit(session: ClientSession, query: str) -> str | None:
    result = await session.call_tool("aai_search", {"query": query, "limit": 3})
    found = result.structured_content or {}
    hits = found.get("results", [])
    return f"{hits[0]['app']['id']}/{hits[0]['tool']}" if hits else None


async def until_found(session: ClientSession, query: str, wanted: str) -> None:
    """Searches until `wanted` comes first: the operations are embedded in the background."""
    with anyio.fail_after(WAIT):
        while await first_hit(session, query) != wanted:
            await anyio.sleep(0.2)


async def test_search_ranks_by_the_endpoints_embeddings_and_keeps_them(tmp_path: Path, endpoint: str) -> None:
    home = coffee_home(tmp_path, endpoint, "hashed")
    log = tmp_path / "gateway.log"
    async with stdio_session(env_of(home), log) as session:
        # "espresso" is no word of any operation: only the endpoint's vectors tell it means coffee.
        await until_found(session, "espresso", "dev.aai.coffee/brew_coffee")
        assert await first_hit(session, "brew coffee") == "dev.aai.coffee/brew_coffee"
    asked = [text for model, text in Embeddings.inputs if model == "hashed"]
    assert any("Brew a cup of coffee." in text for text in asked)
    assert len(asked) > 200, len(asked)  # every operation, the library's too
    assert Embeddings.auth == {f"Bearer {KEY}"}
    assert list((home / ".cache" / "aai-gateway" / "embeddings").rglob("*.f32"))

    # A restart reads the vectors from disk: only the query is asked for.
    Embeddings.inputs.clear()
    async with stdio_session(env_of(home), log) as session:
        await until_found(session, "latte", "dev.aai.coffee/brew_coffee")
    assert [text for _, text in Embeddings.inputs] == ["latte"]
    assert KEY not in log.read_text()


async def test_without_search_embeddings_meaning_is_not_asked(tmp_path: Path, endpoint: str) -> None:
    home = coffee_home(tmp_path, endpoint, "off")
    config = json.loads((home / ".aai" / "config.json").read_text())
    (home / ".aai" / "config.json").write_text(json.dumps({**config, "search": {"embeddings": False}}))
    async with stdio_session(env_of(home), tmp_path / "gateway.log") as session:
        assert await first_hit(session, "espresso") is None
        assert await first_hit(session, "brew coffee") == "dev.aai.coffee/brew_coffee"
    assert not [text for model, text in Embeddings.inputs if model == "off"]


@pytest.mark.hostile("search")
@pytest.mark.parametrize(
    ("model", "said"),
    [
        ("down", "cannot embed the operations for search"),
        ("slow", "did not answer within 1 s (llm.timeout)"),
        ("huge", "the answer is larger than"),
        ("garbage", "the answer is not an embeddings list"),
        ("nan", "is zero or not finite"),
        ("short", "embeddings for"),
    ],
)
async def test_search_goes_on_by_words_when_the_endpoint_fails(
    tmp_path: Path, endpoint: str, model: str, said: str
) -> None:
    base = "http://127.0.0.1:9/v1" if model == "down" else endpoint  # port 9 (discard): nothing listens
    home = coffee_home(tmp_path, base, model, **({"timeout": 1} if model == "slow" else {}))
    log = tmp_path / "gateway.log"
    async with stdio_session(env_of(home), log) as session:
        with anyio.fail_after(20):  # generous: a search never waits for the endpoint's documents
            for _ in range(3):
                assert await first_hit(session, "brew coffee") == "dev.aai.coffee/brew_coffee"
                await anyio.sleep(1.5 if model == "slow" else 0.3)
            assert await first_hit(session, "espresso") is None
    text = log.read_text()
    assert said in text, text
    assert text.count("searching by words only") == 1, text


@pytest.mark.hostile("search")
async def test_a_slow_query_embedding_is_not_waited_for(tmp_path: Path, endpoint: str) -> None:
    """The operations are embedded; the query's embedding takes longer than a search waits."""
    home = coffee_home(tmp_path, endpoint, "slow-query")
    log = tmp_path / "gateway.log"
    async with stdio_session(env_of(home), log) as session:
        with anyio.fail_after(WAIT):
            while "operations embedded" not in log.read_text():
                assert await first_hit(session, "brew coffee") == "dev.aai.coffee/brew_coffee"
                await anyio.sleep(0.2)
        with anyio.fail_after(1 + SLOW - 0.5):  # the search's 1 s wait, not the endpoint's 3 s
            assert await first_hit(session, "espresso") is None
        with anyio.fail_after(SLOW - 1):  # within the cooldown, queries are not asked for at all
            for _ in range(3):
                assert await first_hit(session, "brew coffee") == "dev.aai.coffee/brew_coffee"
    text = log.read_text()
    assert "cannot embed search queries" in text, text
    assert text.count("cannot embed search queries") == 1, text

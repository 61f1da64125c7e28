"""A local OpenAI-compatible `/v1/embeddings` serving the wordllama model's vectors (the `semantic` extra), so
`search_quality --embeddings` measures `search.embeddings` end to end with the same model `search.semantic`
loads in process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

from tests.support import served

MODEL = "wordllama-256"


class Embeddings(BaseHTTPRequestHandler):
    model: ClassVar[Any] = None
    requests: ClassVar[int] = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        Embeddings.requests += 1
        rows = self.model.embed(list(body["input"]), norm=True).tolist()
        data = json.dumps({"object": "list", "data": [{"index": i, "embedding": r} for i, r in enumerate(rows)]})
        answer = data.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        with suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def wordllama_endpoint() -> Iterator[str]:
    """The endpoint's base URL (`llm.baseUrl`), serving while the context lasts."""
    import wordllama  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: PLC0415 (optional)

    folder = Path(wordllama.__file__).parent
    Embeddings.model = wordllama.WordLlama.load(dim=256, cache_dir=folder, disable_download=True)
    with served(Embeddings) as base:
        yield f"{base}/v1"

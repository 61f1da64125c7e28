"""A real third-party REST API: SDK client → installed `aai-gateway --mcp` → json-server 0.17.4 on 127.0.0.1.

json-server is installed by `npm install --prefix tests/jsonserver` (scripts/test does). It serves a
db.json in the test's tmp_path and writes every change back to it, so effects are checked both by
asking json-server directly and by reading the file. The shape-A descriptor is written at runtime.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession

from tests.e2e.mcp_client import error_of, stdio_session, text_of
from tests.support import ROOT, stop, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

JSON_SERVER = ROOT / "tests" / "jsonserver" / "node_modules" / ".bin" / "json-server"
APP = "dev.aai.jsonserver"
SEED = {"posts": [{"id": 1, "title": "hello world", "views": 3}, {"id": 2, "title": "second", "views": 0}]}
ID = {"type": "integer"}


def descriptor(base_url: str) -> dict[str, Any]:
    def tool(name: str, method: str, endpoint: str, properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
        required = ["id"] if "id" in properties else []
        required += ["title"] if name == "create_post" else []
        parameters = {"type": "object", "properties": properties, "required": required}
        about = {"name": name, "description": name.replace("_", " "), "parameters": parameters}
        return {**about, "endpoint": endpoint, "method": method, **extra}

    fields = {"title": {"type": "string"}, "views": {"type": "integer"}}
    body = {"title": "${title}", "views": "${views}"}
    query = {"title_like": "${title_like}", "_limit": "${limit}"}
    return {
        "schema_version": "1.0",
        "appId": APP,
        "name": "json-server posts",
        "description": "json-server 0.17 serving a db.json of posts",
        "version": "1.0.0",
        "platforms": {
            "web": {
                "automation": "restapi",
                "base_url": base_url,
                "default_headers": {"Accept": "application/json"},
                "tools": [
                    tool(
                        "list_posts",
                        "GET",
                        "/posts",
                        {"title_like": {"type": "string"}, "limit": ID},
                        query_params=query,
                    ),
                    tool("get_post", "GET", "/posts/${id}", {"id": ID}),
                    tool("create_post", "POST", "/posts", fields, body=body),
                    tool("update_post", "PATCH", "/posts/${id}", {"id": ID, **fields}, body=body),
                    tool("delete_post", "DELETE", "/posts/${id}", {"id": ID}),
                ],
            }
        },
    }


@dataclass
class JsonServer:
    url: str
    db: Path

    def get(self, path: str) -> Any:
        return httpx2.get(f"{self.url}{path}").json()

    def stored(self) -> list[dict[str, Any]]:
        posts: list[dict[str, Any]] = json.loads(self.db.read_text())["posts"]
        return posts


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def answers(url: str) -> bool:
    try:
        return httpx2.get(f"{url}/posts", timeout=1).status_code == 200
    except httpx2.HTTPError:
        return False


@pytest.fixture
def json_server(tmp_path: Path) -> Iterator[JsonServer]:
    if not JSON_SERVER.exists():
        raise RuntimeError(
            "json-server is not installed: run `npm install --prefix tests/jsonserver` (scripts/test does)"
        )
    assert shutil.which("node"), "node is not installed"
    db = tmp_path / "db.json"
    db.write_text(json.dumps(SEED))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (tmp_path / "json-server.log").open("w") as log:
        proc = subprocess.Popen(
            [str(JSON_SERVER), "--watch", str(db), "--port", str(port), "--host", "127.0.0.1"],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )
    try:
        wait_until(lambda: answers(url) or proc.poll() is not None, 30, "json-server answering")
        assert proc.poll() is None, (tmp_path / "json-server.log").read_text()
        yield JsonServer(url, db)
    finally:
        stop(proc)


@pytest.fixture
def home(tmp_path: Path, json_server: JsonServer) -> dict[str, str]:
    home = tmp_path / "home"
    target = home / ".aai" / APP / "aai.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(descriptor(json_server.url), indent=2))
    (home / ".aai" / "config.json").write_text(json.dumps({"web": {"allowHttpLoopback": True}}))
    return {"HOME": str(home), "AAI_PLATFORM": "linux"}


async def run(session: ClientSession, tool: str, **args: Any) -> Any:
    return json.loads(text_of(await session.call_tool("aai_exec", {"app": APP, "tool": tool, "args": args})))


async def test_crud_through_the_gateway(home: dict[str, str], json_server: JsonServer, tmp_path: Path) -> None:
    async with stdio_session(home, tmp_path / "stderr.log") as session:
        assert await run(session, "list_posts") == SEED["posts"]
        assert await run(session, "list_posts", title_like="world") == [SEED["posts"][0]]
        assert await run(session, "list_posts", limit=1) == [SEED["posts"][0]]
        assert await run(session, "get_post", id=2) == SEED["posts"][1]

        created = await run(session, "create_post", title="from the gateway ✓", views=42)
        assert created == {"id": 3, "title": "from the gateway ✓", "views": 42}
        assert json_server.get("/posts/3") == created
        wait_until(lambda: len(json_server.stored()) == 3, 10, "json-server writing db.json")
        stored = json_server.stored()[2]
        assert stored == created
        assert isinstance(stored["views"], int)

        viewless = await run(session, "create_post", title="no views")
        assert viewless == {"id": 4, "title": "no views"}

        patched = await run(session, "update_post", id=3, views=43)
        assert patched == {**created, "views": 43}
        assert json_server.get("/posts/3")["views"] == 43

        assert await run(session, "delete_post", id=1) == {}
        assert [post["id"] for post in json_server.get("/posts")] == [2, 3, 4]
        wait_until(lambda: [post["id"] for post in json_server.stored()] == [2, 3, 4], 10, "db.json losing post 1")

        error = await error_of(session, "aai_exec", {"app": APP, "tool": "get_post", "args": {"id": 1}})
        assert error.code == -32013
        assert isinstance(error.data, dict)
        assert error.data["type"] == "API_REQUEST_FAILED"
        assert error.data["detail"] == "GET /posts/1 answered 404 Not Found: {}"

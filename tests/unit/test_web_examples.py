"""The bundled web examples (GitHub with a bearer token, Notion with OAuth 2) build the requests their
APIs document; they are never called from tests (no internet)."""

from __future__ import annotations

from aai_gateway.descriptor.validate import load
from aai_gateway.executors.http_request import build
from tests.support import EXAMPLES


def test_github_issue_requests() -> None:
    app = load(EXAMPLES / "com.github.api" / "aai.json").descriptor
    assert app is not None
    binding = app.bindings["web"]
    listed = build(binding, binding.tool("list_issues") or binding.tools[0], {"owner": "octo cat", "repo": "hello"})
    assert (listed.method, listed.base.origin, listed.path) == (
        "GET",
        "https://api.github.com",
        "/repos/octo%20cat/hello/issues",
    )
    assert dict(listed.query) == {"state": "open"}
    assert ("X-GitHub-Api-Version", "2022-11-28") in listed.headers
    created = build(
        binding, binding.tool("create_issue") or binding.tools[0], {"owner": "o", "repo": "r", "title": "Bug"}
    )
    assert (created.method, created.path, created.body) == ("POST", "/repos/o/r/issues", {"title": "Bug"})
    assert (binding.auth or {})["type"] == "bearer"


def test_notion_page_requests() -> None:
    app = load(EXAMPLES / "com.notion.api" / "aai.json").descriptor
    assert app is not None
    binding = app.bindings["web"]
    page = build(binding, binding.tool("get_page") or binding.tools[0], {"page_id": "abc-123"})
    assert (page.method, page.base.origin, page.path) == ("GET", "https://api.notion.com", "/v1/pages/abc-123")
    search = build(binding, binding.tool("search") or binding.tools[0], {"query": "plans"})
    assert (search.method, search.path, search.body) == ("POST", "/v1/search", {"query": "plans"})
    assert ("Notion-Version", "2022-06-28") in search.headers
    assert (binding.auth or {})["oauth2"]["pkce"]["method"] == "S256"

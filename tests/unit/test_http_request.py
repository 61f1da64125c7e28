"""Building HTTP requests from web tools: shape A templates, shape B/C paths, and hostile values."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from aai_gateway.descriptor import Binding, Tool
from aai_gateway.errors import AaiError, AaiJsonInvalid, InvalidParams
from aai_gateway.executors.http_request import HttpRequest, build, inside, split_base

BASE = "https://api.example.com/v1"


def a_tool(parameters: Mapping[str, Any] | None = None, **options: Any) -> tuple[Binding, Tool]:
    """A shape A (`restapi`) binding with one tool."""
    tool = Tool("t", "", parameters or {"type": "object", "properties": {}}, options=options)
    binding = Binding(
        "web", "restapi", (tool,), options={"base_url": BASE, "default_headers": {"Accept": "application/json"}}
    )
    return binding, tool


def c_tool(path: str, method: str = "GET", base: str = BASE, **options: Any) -> tuple[Binding, Tool]:
    """A shape B/C (`http`) binding with one tool."""
    tool = Tool("t", "", {"type": "object", "properties": {}}, options={"path": path, "method": method, **options})
    return Binding("web", "http", (tool,), options={"base_url": base}), tool


def a_request(args: Mapping[str, Any], parameters: Mapping[str, Any] | None = None, **options: Any) -> HttpRequest:
    return build(*a_tool(parameters, **options), args)


def c_request(path: str, args: Mapping[str, Any], method: str = "GET", **options: Any) -> HttpRequest:
    return build(*c_tool(path, method, **options), args)


@pytest.mark.parametrize(
    ("base", "origin", "path"),
    [
        ("https://api.example.com/v1", "https://api.example.com", "/v1"),
        ("https://API.Example.com/v1/", "https://api.example.com", "/v1"),
        ("https://api.example.com", "https://api.example.com", ""),
        ("https://api.example.com:443/x", "https://api.example.com", "/x"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080", "/v1"),
        ("http://[::1]:9000/", "http://[::1]:9000", ""),
    ],
)
def test_base_urls(base: str, origin: str, path: str) -> None:
    parsed = split_base(base)
    assert (parsed.origin, parsed.path) == (origin, path)


@pytest.mark.parametrize(
    ("base", "says"),
    [
        (None, "gives no base_url"),
        ("", "gives no base_url"),
        ("ftp://example.com/", "http or https"),
        ("file:///etc/passwd", "http or https"),
        ("https://user:pw@example.com/", "user name or password"),
        ("https://example.com/v1?x=1", "query or a fragment"),
        ("https://example.com/v1#top", "query or a fragment"),
        ("https://example.com:99999/", "not a valid URL"),
    ],
)
def test_unusable_base_urls(base: Any, says: str) -> None:
    with pytest.raises(AaiJsonInvalid, match=says) as caught:
        split_base(base)
    assert "pw" not in caught.value.detail


def test_shape_a_every_part_rendered() -> None:
    request = a_request(
        {"id": "42", "q": "a b&c=d", "n": 3, "tags": ["x", "y"], "flag": False, "note": "hi"},
        endpoint="/items/${id}/search",
        method="post",
        query_params={"q": "${q}", "n": "${n}", "tag": "${tags}", "flag": "${flag}", "fixed": "1"},
        headers={"X-Note": "note: ${note}"},
        body={"query": "${q}", "count": "${n}", "tags": "${tags}", "flag": "${flag}", "nested": {"id": "${id}"}},
    )
    assert request.method == "POST"
    assert request.url == (
        "https://api.example.com/v1/items/42/search?q=a%20b%26c%3Dd&n=3&tag=x&tag=y&flag=false&fixed=1"
    )
    assert request.headers == (
        ("Accept", "application/json"),
        ("X-Note", "note: hi"),
        ("Content-Type", "application/json"),
    )
    assert request.body == {"query": "a b&c=d", "count": 3, "tags": ["x", "y"], "flag": False, "nested": {"id": "42"}}
    assert json.loads(request.content or b"") == request.body
    assert str(request) == "POST /v1/items/42/search"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3),
        (2.5, 2.5),
        (True, True),
        (None, None),
        (["a", 1], ["a", 1]),
        ({"k": [1, {"z": None}]}, {"k": [1, {"z": None}]}),
        ("7", "7"),
        ("", ""),
    ],
)
def test_an_exact_placeholder_keeps_the_json_type(value: Any, expected: Any) -> None:
    request = a_request({"v": value}, endpoint="/x", method="POST", body={"v": "${v}", "text": "<${v}>"})
    assert request.body["v"] == expected
    assert type(request.body["v"]) is type(expected)
    assert isinstance(request.body["text"], str)


def test_absent_optional_arguments_are_dropped_everywhere() -> None:
    request = a_request(
        {"keep": "k"},
        endpoint="/x",
        method="PUT",
        query_params={"a": "${missing}", "b": "${keep}", "c": "pre-${missing}"},
        headers={"X-Missing": "${missing}", "X-Keep": "${keep}"},
        body={"a": "${missing}", "b": "${keep}", "list": ["${missing}", "${keep}"], "deep": {"m": "${missing}"}},
    )
    assert request.query == (("b", "k"),)
    assert ("X-Keep", "k") in request.headers
    assert all(name != "X-Missing" for name, _ in request.headers)
    assert request.body == {"b": "k", "list": ["k"], "deep": {}}


def test_schema_defaults_fill_templates() -> None:
    parameters = {"type": "object", "properties": {"page": {"type": "integer", "default": 1}, "q": {"type": "string"}}}
    request = a_request({}, parameters, endpoint="/s", method="GET", query_params={"page": "${page}", "q": "${q}"})
    assert request.query == (("page", "1"),)


def test_null_query_values_are_left_out_and_objects_travel_as_json() -> None:
    request = a_request(
        {"n": None, "o": {"a": 1}}, endpoint="/x", method="GET", query_params={"n": "${n}", "o": "${o}"}
    )
    assert request.query == (("o", '{"a": 1}'),)


def test_a_query_written_in_the_endpoint_is_kept() -> None:
    request = a_request({"q": "x y"}, endpoint="/search?type=page&q=${q}&gone=${absent}#frag", method="GET")
    assert request.url == "https://api.example.com/v1/search?type=page&q=x%20y"


def test_a_body_is_sent_only_when_the_tool_has_one() -> None:
    assert not a_request({}, endpoint="/x", method="POST").has_body
    empty = a_request({}, endpoint="/x", method="POST", body={})
    assert (empty.has_body, empty.content) == (True, b"{}")
    assert a_request({}, endpoint="/x", method="POST", body={}, headers={"content-type": "text/json"}).headers[1:] == (
        ("content-type", "text/json"),
    )


def test_tool_headers_override_default_headers_whatever_the_case() -> None:
    request = a_request({}, endpoint="/x", method="GET", headers={"accept": "text/plain"})
    assert request.headers == (("accept", "text/plain"),)


@pytest.mark.parametrize(
    ("method", "args", "url", "body"),
    [
        ("GET", {"id": "7", "limit": 5, "tag": ["a", "b"]}, f"{BASE}/tasks/7?limit=5&tag=a&tag=b", None),
        ("DELETE", {"id": "7", "force": True}, f"{BASE}/tasks/7?force=true", None),
        ("HEAD", {"id": "7"}, f"{BASE}/tasks/7", None),
        ("POST", {"id": "7", "title": "t", "n": 2}, f"{BASE}/tasks/7", {"title": "t", "n": 2}),
        ("PUT", {"id": "7", "tags": ["x"]}, f"{BASE}/tasks/7", {"tags": ["x"]}),
        ("patch", {"id": "7", "done": None}, f"{BASE}/tasks/7", {"done": None}),
        ("POST", {"id": "7"}, f"{BASE}/tasks/7", None),
    ],
)
def test_shape_c_path_arguments_are_consumed_and_the_rest_goes_by_method(
    method: str, args: dict[str, Any], url: str, body: Any
) -> None:
    request = c_request("/tasks/{id}", args, method)
    assert request.url == url
    assert request.body == body
    assert request.has_body == (body is not None)


def test_shape_c_accepts_both_placeholder_forms_and_consumes_header_arguments() -> None:
    request = c_request(
        "/a/{x}/b/${y}", {"x": "1", "y": 2, "trace": "t-1", "rest": "r"}, "POST", headers={"X-Trace": "${trace}"}
    )
    assert request.path == "/v1/a/1/b/2"
    assert ("X-Trace", "t-1") in request.headers
    assert request.body == {"rest": "r"}
    assert request.used == {"x", "y", "trace"}


def test_shape_c_without_a_path_is_a_descriptor_problem() -> None:
    tool = Tool("t", "", {"type": "object"}, options={"method": "GET"})
    with pytest.raises(AaiJsonInvalid, match=r"no execution\.path"):
        build(Binding("web", "http", (tool,), options={"base_url": BASE}), tool, {})


@pytest.mark.parametrize(
    ("value", "segment"),
    [
        ("a/b", "a%2Fb"),
        ("?x=1#", "%3Fx%3D1%23"),
        ("a b", "a%20b"),
        ("100%", "100%25"),
        ("提醒事项 🎉", "%E6%8F%90%E9%86%92%E4%BA%8B%E9%A1%B9%20%F0%9F%8E%89"),
        ("...", "..."),
        ("a..b", "a..b"),
        ("line\nbreak", "line%0Abreak"),
        (42, "42"),
        (1.5, "1.5"),
        (True, "true"),
    ],
)
def test_path_values_are_encoded_whole(value: Any, segment: str) -> None:
    assert c_request("/tasks/{id}", {"id": value}).path == f"/v1/tasks/{segment}"
    assert a_request({"id": value}, endpoint="/tasks/${id}/x", method="GET").path == f"/v1/tasks/{segment}/x"


@pytest.mark.parametrize(
    "value",
    [
        "..",
        ".",
        "../",
        "../secret",
        "a/../../secret",
        "..\\..\\secret",
        "%2e%2e",
        "%2E%2e/",
        "%2e%2e%2fsecret",
        "..%2F..%2Fsecret",
        "%252e%252e%252f",
        "%25252e%25252e",
        "",
    ],
)
def test_traversal_and_empty_path_values_are_refused(value: str) -> None:
    with pytest.raises(InvalidParams, match="argument 'id' goes into the URL path"):
        c_request("/tasks/{id}", {"id": value})
    with pytest.raises(InvalidParams, match="argument 'id' goes into the URL path"):
        a_request({"id": value}, endpoint="/tasks/${id}", method="GET")


@pytest.mark.parametrize("value", [None, ["a"], {"a": 1}])
def test_path_values_must_be_scalars(value: Any) -> None:
    with pytest.raises(InvalidParams, match="must be a string or a number"):
        c_request("/tasks/{id}", {"id": value})


def test_a_path_argument_without_a_value_or_default_is_refused() -> None:
    with pytest.raises(InvalidParams, match="argument 'id' is needed by the URL path"):
        c_request("/tasks/{id}", {})


@pytest.mark.parametrize("endpoint", ["/../admin", "/a/../../admin", "/%2e%2e/admin", "../x"])
def test_a_descriptor_path_that_climbs_out_of_the_base_is_refused(endpoint: str) -> None:
    with pytest.raises(InvalidParams, match="would leave the API's base path /v1"):
        a_request({}, endpoint=endpoint, method="GET")


@pytest.mark.parametrize(
    ("base", "path", "ok"),
    [
        ("/v1", "/v1", True),
        ("/v1", "/v1/a/b", True),
        ("/v1", "/v10", False),
        ("/v1", "/v1/../v2", False),
        ("/v1", "/v1/a%2F..%2F..%2Fx", False),
        ("", "/anything", True),
    ],
)
def test_inside(base: str, path: str, ok: bool) -> None:
    assert inside(base, path) is ok


@pytest.mark.parametrize(
    "value", ["a\nb", "a\r\nX-Injected: 1", "nul\x00", "bell\x07", "del\x7f", "\n", "x\rContent-Length: 0"]
)
def test_line_breaks_and_control_characters_in_header_values_are_refused(value: str) -> None:
    with pytest.raises(InvalidParams, match="header X-Note: a value may not contain line breaks"):
        a_request({"note": value}, endpoint="/x", method="GET", headers={"X-Note": "${note}"})
    with pytest.raises(InvalidParams, match="header X-Note"):
        c_request("/x", {"note": value}, headers={"X-Note": "${note}"})


@pytest.mark.parametrize("value", ["tab\tinside", "提醒事项 — émoji 🎉", "quote \" and ' and \\", '{"json": 1}'])
def test_other_header_values_pass_unchanged(value: str) -> None:
    request = a_request({"note": value}, endpoint="/x", method="GET", headers={"X-Note": "${note}"})
    assert request.header("x-note") == value


@pytest.mark.parametrize("name", ["Bad Header", "X-Bad:", "Bad\nName", ""])
def test_invalid_header_names_are_a_descriptor_problem(name: str) -> None:
    with pytest.raises(AaiJsonInvalid, match="not a valid HTTP header name"):
        a_request({}, endpoint="/x", method="GET", headers={name: "v"})


@pytest.mark.parametrize(
    "value",
    ["../", "%2e%2e/", "?x=1#", "a\r\nb", "\x00", "'; DROP TABLE tasks; --", "$(id)", "提醒事项", "x" * 60_000],
)
def test_hostile_values_reach_query_and_body_as_plain_data(value: str) -> None:
    request = a_request(
        {"v": value}, endpoint="/x", method="POST", query_params={"v": "${v}"}, body={"v": "${v}", "w": "<${v}>"}
    )
    assert request.path == "/v1/x"
    assert request.query == (("v", value),)
    assert request.body == {"v": value, "w": f"<{value}>"}
    assert json.loads(request.content or b"") == request.body
    assert "#" not in request.url.partition("?")[2].replace("%23", "")


def test_unknown_methods_are_a_descriptor_problem() -> None:
    with pytest.raises(AaiJsonInvalid, match="method 'TRACE' is not one of"):
        c_request("/x", {}, "TRACE")


def test_every_refusal_is_an_aai_error() -> None:
    for call in (lambda: c_request("/t/{id}", {"id": ".."}), lambda: split_base("gopher://x")):
        with pytest.raises(AaiError):
            call()


def test_golden_descriptors_build() -> None:
    parameters = {"type": "object", "properties": {"query": {"type": "string"}}}
    tool = Tool(
        "search", "", parameters, options={"endpoint": "/search", "method": "POST", "body": {"query": "${query}"}}
    )
    binding = Binding(
        "web",
        "restapi",
        (tool,),
        options={
            "base_url": "https://api.notion.com/v1",
            "default_headers": {"Notion-Version": "2022-06-28", "Content-Type": "application/json"},
        },
    )
    request = build(binding, tool, {"query": "notes"})
    assert request.url == "https://api.notion.com/v1/search"
    assert request.headers == (("Notion-Version", "2022-06-28"), ("Content-Type", "application/json"))
    assert request.content == b'{"query": "notes"}'

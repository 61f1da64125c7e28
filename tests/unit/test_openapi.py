"""OpenAPI 3 → aai.json (shape A, web): names, parameters, bodies, $ref, servers, security, appIds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aai_gateway.authoring import openapi
from aai_gateway.descriptor.validate import check_document
from tests.support import TEST_APPS


def spec(paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "Tasks API"}, "servers": [{"url": "https://api.example.com/v1"}],
            "paths": paths, **extra}  # fmt: skip


def only_tool(document: dict[str, Any]) -> dict[str, Any]:
    tools: list[dict[str, Any]] = document["platforms"]["web"]["tools"]
    assert len(tools) == 1
    return tools[0]


@pytest.mark.parametrize(
    ("method", "path", "operation", "name"),
    [
        ("get", "/tasks", {"operationId": "listTasks"}, "list_tasks"),
        ("get", "/tasks", {"operationId": "get-task.by id"}, "get_task_by_id"),
        ("get", "/tasks", {"operationId": "GetURL"}, "get_url"),
        ("get", "/tasks/{id}", {}, "get_tasks_id"),
        ("delete", "/a/b", {"operationId": "  "}, "delete_a_b"),
        ("post", "/", {}, "post"),
        ("get", "/x", {"operationId": "2fa"}, "_2fa"),
    ],
)
def test_tool_names(method: str, path: str, operation: dict[str, Any], name: str) -> None:
    assert openapi.tool_name(method, path, operation) == name


def test_colliding_names_are_numbered() -> None:
    doc = openapi.generate(spec({"/a": {"get": {"operationId": "x"}}, "/b": {"get": {"operationId": "x"}}})).document
    assert [t["name"] for t in doc["platforms"]["web"]["tools"]] == ["x", "x_2"]


@pytest.mark.parametrize(
    ("operation", "expected"),
    [
        ({"summary": "List  tasks", "description": "long"}, "List tasks"),
        ({"description": "Only a\ndescription"}, "Only a description"),
        ({}, "GET /t"),
    ],
)
def test_descriptions(operation: dict[str, Any], expected: str) -> None:
    assert openapi.tool_for("get", "/t", operation, [])["description"] == expected


def test_path_query_and_header_parameters() -> None:
    shared = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]
    operation = {
        "parameters": [
            {"name": "limit", "in": "query", "required": True, "schema": {"type": "integer"}, "description": "max"},
            {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
            {"name": "sid", "in": "cookie", "schema": {"type": "string"}},
        ]
    }
    tool = openapi.tool_for("get", "/tasks/{id}/items", operation, shared)
    assert tool["endpoint"] == "/tasks/${id}/items"
    assert tool["query_params"] == {"limit": "${limit}"}
    assert tool["headers"] == {"X-Trace": "${X_Trace}"}
    assert tool["parameters"] == {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "limit": {"type": "integer", "description": "max"},
            "X_Trace": {"type": "string"},
        },
        "required": ["id", "limit"],
    }
    assert "body" not in tool


def test_operation_parameters_override_shared_ones() -> None:
    shared = [{"name": "q", "in": "query", "schema": {"type": "string"}}]
    tool = openapi.tool_for("get", "/s", {"parameters": [{"name": "q", "in": "query", "schema": {"type": "integer"}}]},
                            shared)  # fmt: skip
    assert tool["parameters"]["properties"] == {"q": {"type": "integer"}}


@pytest.mark.parametrize(
    ("request_body", "properties", "required", "body"),
    [
        (
            {"content": {"application/json": {"schema": {"type": "object", "required": ["title"],
             "properties": {"title": {"type": "string"}, "done": {"type": "boolean"}}}}}},
            {"title": {"type": "string"}, "done": {"type": "boolean"}},
            ["title"],
            {"title": "${title}", "done": "${done}"},
        ),
        (
            {"content": {"application/merge-patch+json": {"schema": {"properties": {"a": {"type": "integer"}}}}}},
            {"a": {"type": "integer"}},
            None,
            {"a": "${a}"},
        ),
        (
            {"required": True, "content": {"application/json": {"schema": {"type": "array", "items": {}}}}},
            {"body": {"type": "array", "items": {}}},
            ["body"],
            None,
        ),
        ({"content": {"text/plain": {"schema": {"type": "string"}}}}, {}, None, None),
    ],
)  # fmt: skip
def test_bodies(
    request_body: dict[str, Any], properties: dict[str, Any], required: list[str] | None, body: Any
) -> None:
    notes: list[str] = []
    tool = openapi.tool_for("post", "/t", {"requestBody": request_body}, [], notes)
    assert tool["parameters"]["properties"] == properties
    assert tool["parameters"].get("required") == required
    assert tool.get("body") == body
    assert bool(notes) == (properties == {"body": {"type": "array", "items": {}}})


def test_body_property_clashing_with_a_path_parameter_is_prefixed() -> None:
    operation = {
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "requestBody": {"content": {"application/json": {"schema": {"properties": {"id": {"type": "integer"}}}}}},
    }
    tool = openapi.tool_for("put", "/t/{id}", operation, [])
    assert tool["endpoint"] == "/t/${id}"
    assert tool["body"] == {"id": "${body_id}"}
    assert tool["parameters"]["properties"]["body_id"] == {"type": "integer"}


def test_refs_are_inlined_and_recursion_is_cut() -> None:
    root = {
        "components": {
            "schemas": {
                "Node": {"type": "object", "properties": {"name": {"type": "string"},
                         "child": {"$ref": "#/components/schemas/Node"}}},
                "Wrap": {"$ref": "#/components/schemas/Node"},
            },
            "parameters": {"Id": {"name": "id", "in": "path", "schema": {"type": "string"}}},
        }
    }  # fmt: skip
    node = openapi.resolve_refs({"$ref": "#/components/schemas/Wrap"}, root)
    assert node == {"type": "object", "properties": {"name": {"type": "string"}, "child": {}}}
    assert openapi.resolve_refs({"$ref": "#/components/schemas/Missing"}, root) == {}
    assert openapi.resolve_refs({"$ref": "other.json#/X"}, root) == {}
    assert openapi.resolve_refs([{"$ref": "#/components/parameters/Id"}], root) == [
        {"name": "id", "in": "path", "schema": {"type": "string"}}
    ]


def test_refs_in_a_generated_tool() -> None:
    doc = spec(
        {"/t/{id}": {"parameters": [{"$ref": "#/components/parameters/Id"}],
                     "post": {"requestBody": {"content": {"application/json": {
                         "schema": {"$ref": "#/components/schemas/New"}}}}}}},
        components={"schemas": {"New": {"type": "object", "properties": {"title": {"type": "string"}}}},
                    "parameters": {"Id": {"name": "id", "in": "path", "schema": {"type": "string"}}}},
    )  # fmt: skip
    tool = only_tool(openapi.generate(doc).document)
    assert tool["endpoint"] == "/t/${id}"
    assert tool["body"] == {"title": "${title}"}
    assert tool["parameters"]["required"] == ["id"]


@pytest.mark.parametrize(
    ("servers", "source", "base"),
    [
        ([{"url": "https://api.example.com/v1/"}], None, "https://api.example.com/v1"),
        ([{"url": "/v1"}], "http://127.0.0.1:8080/openapi.json", "http://127.0.0.1:8080/v1"),
        ([{"url": "v2"}], "https://h.example/api/openapi.json", "https://h.example/api/v2"),
        ([{"url": "/v1"}], None, None),
        ([], None, None),
        ([], "https://h.example/openapi.json", "https://h.example"),
        ([{"url": "https://{region}.example.com", "variables": {"region": {"default": "eu"}}}], None,
         "https://eu.example.com"),
    ],
)  # fmt: skip
def test_base_url(servers: list[Any], source: str | None, base: str | None) -> None:
    assert openapi.base_url_for({"servers": servers}, source) == base


@pytest.mark.parametrize(
    ("schemes", "security", "auth"),
    [
        ({"b": {"type": "http", "scheme": "Bearer"}}, None, {"type": "bearer"}),
        ({"k": {"type": "apiKey", "in": "header", "name": "X-Key"}}, None,
         {"type": "api_key", "key_name": "X-Key", "key_placement": "header"}),
        ({"k": {"type": "apiKey", "in": "query", "name": "api_key"}}, None,
         {"type": "api_key", "key_name": "api_key", "key_placement": "query"}),
        ({"k": {"type": "apiKey", "in": "cookie", "name": "s"}}, None, None),
        ({"basic": {"type": "http", "scheme": "basic"}}, None, None),
        ({"o": {"type": "oauth2", "flows": {"authorizationCode": {"authorizationUrl": "https://a.example/auth",
          "tokenUrl": "/token", "scopes": {"read": "r", "write": "w"}}}}}, None,
         {"type": "oauth2", "auth_url": "https://a.example/auth", "token_url": "https://api.example.com/token",
          "scopes": ["read", "write"]}),
        ({"o": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "/t"}}}}, None, None),
        ({"k": {"type": "apiKey", "in": "header", "name": "X-Key"}, "b": {"type": "http", "scheme": "bearer"}},
         [{"b": []}], {"type": "bearer"}),
    ],
)  # fmt: skip
def test_security_schemes(schemes: dict[str, Any], security: list[Any] | None, auth: dict[str, Any] | None) -> None:
    doc: dict[str, Any] = {"components": {"securitySchemes": schemes}}
    if security is not None:
        doc["security"] = security
    assert openapi.auth_for(doc, "https://api.example.com/v1")[0] == auth


@pytest.mark.parametrize(
    ("title", "url", "app_id"),
    [
        ("Tasks API", "https://api.example.com/v1", "com.example.api.tasks-api"),
        ("Petstore", None, "local.petstore"),
        ("REST Tasks", "http://127.0.0.1:8080", "x-1.x-0.x-0.x-127.rest-tasks"),
        ("Example", "https://example.com", "com.example"),
        ("!!!", "http://localhost:8080", "localhost.api"),
    ],
)
def test_app_ids_come_from_the_server_host_and_the_title(title: str, url: str | None, app_id: str) -> None:
    servers = [{"url": url}] if url else []
    generated = openapi.generate(spec({}, info={"title": title}, servers=servers))
    assert generated.app_id == app_id


def test_app_id_option_is_validated() -> None:
    assert openapi.generate(spec({}), app_id="dev.aai.x").app_id == "dev.aai.x"
    with pytest.raises(ValueError, match="not a valid appId"):
        openapi.generate(spec({}), app_id="Not An Id")


@pytest.mark.parametrize("doc", [{"swagger": "2.0"}, {"openapi": 3}, {}])
def test_not_openapi_3(doc: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not an OpenAPI 3"):
        openapi.generate(doc)


@pytest.mark.parametrize(
    ("text", "exists", "expected"),
    [
        ("org.mpris.MediaPlayer2.mpv", False, False),
        ("https://api.example.com/openapi.json", False, True),
        ("HTTP://127.0.0.1:8080/openapi.json", False, True),
        ("openapi.json", True, True),
        ("openapi.json", False, False),
    ],
)
def test_is_source(text: str, exists: bool, expected: bool) -> None:
    assert openapi.is_source(text, exists) is expected


def test_the_rest_servers_document_gives_a_valid_descriptor() -> None:
    doc = json.loads((TEST_APPS / "rest_server.openapi.json").read_text())
    generated = openapi.generate(doc, source_url="http://127.0.0.1:9/v1/openapi.json")
    web = generated.document["platforms"]["web"]
    assert generated.app_id == "x-1.x-0.x-0.x-127.rest-tasks"
    assert web["base_url"] == "http://127.0.0.1:9/v1"
    assert web["auth"] == {"type": "api_key", "key_name": "X-API-Key", "key_placement": "header"}
    names = [t["name"] for t in web["tools"]]
    assert names == ["list_tasks", "create_task", "get_task", "delete_task", "update_task", "put_echo_rest",
                     "secure_echo"]  # fmt: skip
    hints = {t["name"]: t.get("annotations") for t in web["tools"]}
    assert hints["list_tasks"] == hints["get_task"] == {"readOnlyHint": True}
    assert hints["delete_task"] == {"destructiveHint": True, "idempotentHint": True}
    assert hints["create_task"] is None
    loaded = check_document(generated.document, "-")
    assert not [p for p in loaded.problems if p.severity == "error"]
    assert loaded.descriptor is not None
    listed = loaded.descriptor.bindings["web"].tool("list_tasks")
    assert listed is not None
    assert listed.read_only


@pytest.mark.parametrize(
    ("method", "hints"),
    [
        ("get", {"readOnlyHint": True}),
        ("head", {"readOnlyHint": True}),
        ("put", {"idempotentHint": True}),
        ("delete", {"destructiveHint": True, "idempotentHint": True}),
        ("post", None),
        ("patch", None),
    ],
)
def test_methods_give_the_hints_http_promises(method: str, hints: dict[str, bool] | None) -> None:
    assert openapi.tool_for(method, "/tasks", {}, []).get("annotations") == hints


def test_parse_refuses_non_json() -> None:
    with pytest.raises(Exception, match="not JSON"):
        openapi.parse(b"openapi: 3.0.0", "x.yaml")
    with pytest.raises(Exception, match="not a JSON object"):
        openapi.parse(b"[]", "x.json")

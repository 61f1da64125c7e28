"""A small REST API for the gateway's web tests (Starlette on uvicorn, 127.0.0.1, a free port).

Once listening it prints ``ready http://127.0.0.1:<port>`` on stdout; SIGTERM stops it. Every
request's raw path is recorded, so a test can prove that nothing outside /v1 was reached.

    GET    /v1/tasks?limit&tag       the tasks, newest last
    POST   /v1/tasks                 {title, tags?, priority?, done?} → 201 with the task
    GET    /v1/tasks/{id}            a task, or 404
    PATCH  /v1/tasks/{id}            change title, tags, priority or done
    DELETE /v1/tasks/{id}            204, or 404
    *      /v1/echo[/{rest}]         {method, path, raw_path, query, headers, body} of the request
    *      /v1/status/{code}         that status with a long body; 429 and 503 send Retry-After (?after,
                                     default 1) on the first request per ?key and 200 afterwards
    GET    /v1/slow?seconds=         answers after that many seconds
    GET    /v1/big?bytes=&chunked=   that many bytes of JSON, with or without a Content-Length
    GET    /v1/drop?length=          starts a response (with a Content-Length if ?length=true) and closes
                                     the connection after 10 bytes of its body
    GET    /v1/flood?bytes=&length=  that many bytes, made as they are sent until the client goes away,
                                     with a Content-Length if ?length=true
    GET    /v1/flood-sent            how many bytes each /v1/flood request sent
    GET    /v1/redirect-away         302 to another host
    GET    /v1/redirect-outside      302 to /secret, outside /v1
    *      /v1/redirect-inside       307 to /v1/echo?redirected=1
    *      /v1/secure/header         needs X-API-Key: $REST_API_KEY, then echoes
    *      /v1/secure/query          needs ?api_key=$REST_API_KEY, then echoes
    *      /v1/secure/bearer         needs Authorization: Bearer $REST_BEARER_TOKEN, then echoes
    GET    /v1/seen                  every raw path requested so far
    GET    /secret                   outside the API; no test may ever reach it
    GET    /v1/openapi.json          rest_server.openapi.json, an OpenAPI 3 document of a few endpoints

Run it as ``python tests/apps/rest_server.py``.
"""

import asyncio
import json
import os
import socket
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

ANY = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]

tasks: dict[str, dict[str, Any]] = {}
seen: list[str] = []
hits: Counter[str] = Counter()


async def echo(request: Request) -> Response:
    raw = await request.body()
    try:
        body: Any = json.loads(raw) if raw else None
    except ValueError:
        body = raw.decode("utf-8", errors="replace")
    return JSONResponse(
        {
            "method": request.method,
            "path": request.url.path,
            "raw_path": request.scope["raw_path"].decode("latin-1"),
            "query": request.scope["query_string"].decode("latin-1"),
            "headers": {k.decode("latin-1"): v.decode("utf-8", errors="replace") for k, v in request.scope["headers"]},
            "body": body,
        }
    )


async def list_tasks(request: Request) -> Response:
    found = list(tasks.values())
    tag = request.query_params.get("tag")
    if tag is not None:
        found = [t for t in found if tag in t["tags"]]
    limit = request.query_params.get("limit")
    if limit is not None:
        found = found[: int(limit)]
    return JSONResponse({"tasks": found})


async def create_task(request: Request) -> Response:
    data = await request.json()
    if not isinstance(data.get("title"), str):
        return JSONResponse({"error": "title must be a string"}, status_code=422)
    task = {"id": f"t{len(tasks) + 1}", "title": data["title"], "tags": data.get("tags", []), "done": False}
    task.update({k: data[k] for k in ("priority", "done") if k in data})
    tasks[task["id"]] = task
    return JSONResponse(task, status_code=201)


async def one_task(request: Request) -> Response:
    task = tasks.get(request.path_params["id"])
    if task is None:
        return JSONResponse({"error": f"no task {request.path_params['id']}"}, status_code=404)
    if request.method == "DELETE":
        del tasks[task["id"]]
        return Response(status_code=204)
    if request.method == "PATCH":
        data = await request.json()
        task.update({k: v for k, v in data.items() if k in ("title", "tags", "priority", "done")})
    return JSONResponse(task)


async def status(request: Request) -> Response:
    code = int(request.path_params["code"])
    key = f"{code}:{request.query_params.get('key', '')}"
    hits[key] += 1
    if code in (429, 503) and hits[key] > 1:
        return JSONResponse({"status": 200, "attempts": hits[key]})
    headers = {"Retry-After": request.query_params.get("after", "1")} if code in (429, 503) else {}
    body = f"status {code} from the test API; " + "details " * 200
    return PlainTextResponse(body, status_code=code, headers=headers)


async def slow(request: Request) -> Response:
    await asyncio.sleep(float(request.query_params.get("seconds", "5")))
    return JSONResponse({"slept": True})


async def big(request: Request) -> Response:
    size = int(request.query_params.get("bytes", str(1024 * 1024)))
    payload = json.dumps({"data": "x" * size}).encode()
    if request.query_params.get("chunked") not in (None, "false"):

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(payload), 16384):
                yield payload[start : start + 16384]

        return StreamingResponse(chunks(), media_type="application/json")
    return Response(payload, media_type="application/json")


class Dropped(Exception):
    """Raised mid-body: uvicorn then closes the connection without finishing the response."""


async def drop(request: Request) -> Response:
    headers = {"Content-Length": "1000"} if request.query_params.get("length") == "true" else {}

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"data": "'
        raise Dropped("the test API drops this connection on purpose")

    return StreamingResponse(chunks(), media_type="application/json", headers=headers)


flood_sent: list[int] = []


async def flood(request: Request) -> Response:
    size = int(request.query_params.get("bytes", str(50 * 1024 * 1024)))
    headers = {"Content-Length": str(size)} if request.query_params.get("length") == "true" else {}
    flood_sent.append(0)
    index = len(flood_sent) - 1
    block = b"x" * 65536

    async def chunks() -> AsyncIterator[bytes]:
        while flood_sent[index] < size and not await request.is_disconnected():
            piece = block[: size - flood_sent[index]]
            flood_sent[index] += len(piece)
            yield piece

    return StreamingResponse(chunks(), media_type="application/json", headers=headers)


async def flood_sent_bytes(request: Request) -> Response:
    return JSONResponse(flood_sent)


def guarded(check: Callable[[Request], str | None]) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        given = check(request)
        if given is not None:
            return JSONResponse({"error": f"invalid credential: {given}"}, status_code=401)
        return await echo(request)

    return endpoint


def header_key(request: Request) -> str | None:
    given = request.headers.get("x-api-key", "")
    return None if given == os.environ["REST_API_KEY"] else given


def query_key(request: Request) -> str | None:
    given = request.query_params.get("api_key", "")
    return None if given == os.environ["REST_API_KEY"] else given


def bearer(request: Request) -> str | None:
    given = request.headers.get("authorization", "")
    return None if given == f"Bearer {os.environ['REST_BEARER_TOKEN']}" else given


async def seen_paths(request: Request) -> Response:
    return JSONResponse(seen)


async def secret(request: Request) -> Response:
    return PlainTextResponse("outside the API")


async def openapi(request: Request) -> Response:
    return Response((Path(__file__).parent / "rest_server.openapi.json").read_bytes(), media_type="application/json")


def app() -> Callable[[Any, Any, Any], Awaitable[None]]:
    routes = [
        Route("/v1/tasks", list_tasks, methods=["GET"]),
        Route("/v1/tasks", create_task, methods=["POST"]),
        Route("/v1/tasks/{id}", one_task, methods=["GET", "PATCH", "DELETE"]),
        Route("/v1/echo", echo, methods=ANY),
        Route("/v1/echo/{rest:path}", echo, methods=ANY),
        Route("/v1/status/{code:int}", status, methods=ANY),
        Route("/v1/slow", slow, methods=["GET", "POST"]),
        Route("/v1/big", big, methods=["GET"]),
        Route("/v1/drop", drop, methods=["GET"]),
        Route("/v1/flood", flood, methods=["GET"]),
        Route("/v1/flood-sent", flood_sent_bytes, methods=["GET"]),
        Route("/v1/redirect-away", lambda r: RedirectResponse("http://example.invalid/v1/echo", 302)),
        Route("/v1/redirect-outside", lambda r: RedirectResponse("/secret", 302)),
        Route("/v1/redirect-inside", lambda r: RedirectResponse("/v1/echo?redirected=1", 307), methods=ANY),
        Route("/v1/secure/header", guarded(header_key), methods=ANY),
        Route("/v1/secure/query", guarded(query_key), methods=ANY),
        Route("/v1/secure/bearer", guarded(bearer), methods=ANY),
        Route("/v1/seen", seen_paths),
        Route("/secret", secret, methods=ANY),
        Route("/v1/openapi.json", openapi),
    ]
    starlette = Starlette(routes=routes)

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] != "/v1/seen":
            seen.append(scope["raw_path"].decode("latin-1"))
        await starlette(scope, receive, send)

    return recording


async def serve() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle delay on kept-alive connections
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app(), log_level="warning", lifespan="off", timeout_graceful_shutdown=1))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            await serving
            return
        await asyncio.sleep(0.01)
    print(f"ready http://127.0.0.1:{port}", flush=True)
    await serving


if __name__ == "__main__":
    asyncio.run(serve())

"""OpenTelemetry for real: the installed gateway, switched on by OTEL_EXPORTER_OTLP_ENDPOINT or its config,
exports spans and metrics over OTLP/HTTP to a receiver started here on loopback, continuing the trace the
SDK client sends in `_meta.traceparent` over stdio and HTTP; and loads nothing of it when not configured."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import pytest
from mcp import ClientSession
from mcp_types import RequestParamsMeta
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tests.e2e.mcp_client import http_session, stdio_session, text_of, web_gateway
from tests.support import TEST_APPS, Bus, install_descriptor, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SECRET = "hunter2-never-exported"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    resource: dict[str, Any]


@dataclass
class Receiver:
    """An OTLP/HTTP collector on loopback: POST /v1/traces and /v1/metrics, protobuf bodies decoded."""

    url: str = ""
    spans: list[Span] = field(default_factory=list)
    metrics: list[ExportMetricsServiceRequest] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, path: str, body: bytes, headers: dict[str, str]) -> bytes | None:
        with self.lock:
            self.headers.append(headers)
            if path == "/v1/traces":
                traces = ExportTraceServiceRequest.FromString(body)
                for resource in traces.resource_spans:
                    about = values(resource.resource.attributes)
                    for scope in resource.scope_spans:
                        self.spans.extend(
                            Span(
                                s.name,
                                s.trace_id.hex(),
                                s.span_id.hex(),
                                s.parent_span_id.hex(),
                                values(s.attributes),
                                about,
                            )
                            for s in scope.spans
                        )
                return bytes(ExportTraceServiceResponse().SerializeToString())
            if path == "/v1/metrics":
                self.metrics.append(ExportMetricsServiceRequest.FromString(body))
                return bytes(ExportMetricsServiceResponse().SerializeToString())
        return None

    def calls(self) -> list[Span]:
        with self.lock:
            return [s for s in self.spans if s.name.startswith("execute_tool ")]

    def points(self, name: str) -> list[tuple[dict[str, Any], float]]:
        """(attributes, value) of every data point of a sum metric received, for counts and histograms."""
        found = []
        with self.lock:
            for request in self.metrics:
                for resource in request.resource_metrics:
                    for scope in resource.scope_metrics:
                        for metric in scope.metrics:
                            if metric.name != name:
                                continue
                            kind = metric.WhichOneof("data")
                            for point in getattr(metric, kind).data_points:
                                value = point.count if kind == "histogram" else point.as_int
                                found.append((values(point.attributes), float(value)))
        return found


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def values(pairs: Any) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            answer = found.take(self.path, body, {k.lower(): v for k, v in self.headers.items()})
            self.send_response(404 if answer is None else 200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer or b"")))
            self.end_headers()
            self.wfile.write(answer or b"")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()


def home_for(tmp_path: Path, **config: Any) -> Path:
    home = tmp_path / "home"
    install_descriptor(home / ".aai", TEST_APPS / "dev.aai.echo" / "aai.json")
    (home / ".aai" / "config.json").write_text(json.dumps({"consent": {"default": "allow"}, **config}))
    return home


def quiet_env(bus: Bus, home: Path, **extra: str) -> dict[str, str]:
    """The gateway's environment, with no OTEL_* variable of this process leaking in."""
    env = {k: v for k, v in bus.env(HOME=str(home), AAI_PLATFORM="linux").items() if not k.startswith("OTEL_")}
    return env | extra


def traceparent(span_id: str) -> RequestParamsMeta:
    """`_meta` with a W3C traceparent (the map is open, but mypy does not read `extra_items`)."""
    return cast("RequestParamsMeta", {"traceparent": f"00-{TRACE_ID}-{span_id}-01"})


def exec_args(tool: str, **args: Any) -> dict[str, Any]:
    return {"app": "dev.aai.echo", "tool": tool, "args": args}


async def calls_of(session: ClientSession, first: int) -> list[str]:
    """Three calls of echo (the first served by the MCP SDK, the others off the wire) and one that fails,
    each sent with a traceparent of its own; the parent span ids sent."""
    parents = [f"{first + i:016x}" for i in range(4)]
    for parent in parents[:3]:
        result = await session.call_tool("aai_exec", exec_args("echo", text=SECRET), meta=traceparent(parent))
        assert text_of(result) == SECRET
    failed = await session.call_tool("aai_exec", exec_args("fail", message=SECRET), meta=traceparent(parents[3]))
    assert failed.is_error
    return parents


async def test_calls_over_stdio_and_http_continue_the_clients_trace(
    bus: Bus, echo_app: None, tmp_path: Path, receiver: Receiver
) -> None:
    home = home_for(tmp_path)
    env = quiet_env(
        bus,
        home,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
        OTEL_BSP_SCHEDULE_DELAY="100",
        OTEL_METRIC_EXPORT_INTERVAL="300",
        PYTHONPROFILEIMPORTTIME="1",
    )
    async with stdio_session(env, tmp_path / "stdio.log") as session:
        sent = {"stdio": await calls_of(session, 0x100)}
        batch = {"calls": [exec_args("add", a=1), exec_args("add", a=2)]}
        report = await session.call_tool("aai_batch", batch, meta=traceparent(f"{0x200:016x}"))
        assert not report.is_error
    with web_gateway(env, tmp_path / "web.log") as url:
        async with http_session(url) as session:
            sent["http"] = await calls_of(session, 0x300)
        wait_until(lambda: len(receiver.calls()) >= 10, 20, "the HTTP gateway's spans")
        http_calls = {"aai.app": "dev.aai.echo", "aai.tool": "echo", "aai.transport": "http", "aai.outcome": "ok"}
        wait_until(lambda: (http_calls, 3.0) in receiver.points("aai.gateway.calls"), 20, "the HTTP gateway's metrics")

    spans = receiver.calls()
    by_parent = {s.parent_id: s for s in spans}
    for transport, parents in sent.items():
        for parent in parents:
            span = by_parent[parent]
            assert span.trace_id == TRACE_ID
            assert span.attributes["aai.transport"] == transport
            assert span.attributes["network.transport"] == {"stdio": "pipe", "http": "tcp"}[transport]
            assert span.attributes["mcp.method.name"] == "tools/call"
            assert span.attributes["aai.caller"] == "mcp", "the SDK client's clientInfo.name"
            assert span.resource["service.name"] == "aai-gateway"
        ok, failed = by_parent[parents[0]], by_parent[parents[3]]
        assert ok.name == "execute_tool dev.aai.echo:echo"
        assert ok.attributes["aai.outcome"] == "ok"
        assert "error.type" not in ok.attributes
        assert failed.attributes["aai.outcome"] == "error"
        assert failed.attributes["error.type"] == "AUTOMATION_FAILED"
    batched = [s for s in spans if s.parent_id == f"{0x200:016x}"]
    assert sorted(s.attributes["aai.tool"] for s in batched) == ["add", "add"]
    call_ids = {s.attributes["gen_ai.tool.call.id"] for s in spans}
    assert len(call_ids) == len(spans) == 10
    executed = [s for s in receiver.spans if s.name == "execute dbus"]
    assert sorted(s.parent_id for s in executed) == sorted(s.span_id for s in spans), "each call ran the app once"
    assert all(s.trace_id == TRACE_ID for s in executed)
    assert SECRET not in repr(receiver.spans), "no argument value is exported unless captureArguments asks"

    for transport in sent:
        labels = {"aai.app": "dev.aai.echo", "aai.tool": "echo", "aai.transport": transport, "aai.outcome": "ok"}
        assert max(v for a, v in receiver.points("aai.gateway.calls") if a == labels) == 3, "cumulative counts"
    errors = receiver.points("aai.gateway.call.errors")
    assert any(
        a == {"aai.app": "dev.aai.echo", "aai.tool": "fail", "error.type": "AUTOMATION_FAILED"} for a, _ in errors
    )
    assert any(a["aai.tool"] == "echo" and count >= 1 for a, count in receiver.points("aai.gateway.call.duration"))

    imported = (tmp_path / "stdio.log").read_text()
    assert "opentelemetry.sdk.trace" in imported
    assert "aai_gateway.telemetry.otel" in imported


async def test_the_config_section_exports_captured_arguments_redacted(
    bus: Bus, echo_app: None, tmp_path: Path, receiver: Receiver
) -> None:
    telemetry = {
        "endpoint": receiver.url,
        "serviceName": "gateway-under-test",
        "captureArguments": True,
        "headers": {"x-collector-key": {"$env": "COLLECTOR_KEY"}},
    }
    home = home_for(tmp_path, telemetry=telemetry)
    env = quiet_env(bus, home, COLLECTOR_KEY="k-123", OTEL_BSP_SCHEDULE_DELAY="100")
    async with stdio_session(env, tmp_path / "stdio.log") as session:
        result = await session.call_tool("aai_exec", exec_args("echo", text="shown", password=SECRET))
        assert text_of(result) == "shown"
        wait_until(lambda: bool(receiver.calls()), 20, "the span")

    (span,) = receiver.calls()
    assert span.resource["service.name"] == "gateway-under-test"
    assert span.parent_id == "", "no traceparent sent: a trace of its own"
    assert json.loads(span.attributes["gen_ai.tool.call.arguments"]) == {"text": "shown", "password": "[redacted]"}
    assert SECRET not in repr(receiver.spans)
    assert all(h.get("x-collector-key") == "k-123" for h in receiver.headers)


async def test_nothing_of_opentelemetry_is_loaded_when_not_configured(bus: Bus, echo_app: None, tmp_path: Path) -> None:
    """`python -X importtime` (as PYTHONPROFILEIMPORTTIME) lists every module the gateway imported while
    serving calls over both paths; the MCP SDK itself imports opentelemetry's API, never the SDK."""
    env = quiet_env(bus, home_for(tmp_path), PYTHONPROFILEIMPORTTIME="1")
    async with stdio_session(env, tmp_path / "stdio.log") as session:
        for _ in range(2):
            assert (
                text_of(await session.call_tool("aai_exec", exec_args("echo", text="x"), meta=traceparent("1" * 16)))
                == "x"
            )
    imported = [line.rsplit("|", 1)[-1].strip() for line in (tmp_path / "stdio.log").read_text().splitlines()]
    assert "aai_gateway.service" in imported, "the import list is there"
    assert "aai_gateway.telemetry.switch" in imported
    loaded = [
        name
        for name in imported
        if name.startswith(("opentelemetry.sdk", "opentelemetry.exporter", "aai_gateway.telemetry.otel"))
    ]
    assert loaded == []

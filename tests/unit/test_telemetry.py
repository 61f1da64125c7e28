"""The spans and metrics of calls through `Gateway.call`, in-process against the real DBus echo app, read
back with the OpenTelemetry SDK's in-memory span exporter and metric reader; and when telemetry is on."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from aai_gateway.config import config_value, load_settings
from aai_gateway.consent import Answer, Question
from aai_gateway.errors import AaiError
from aai_gateway.history.redact import MASK
from aai_gateway.service import Caller, Gateway
from aai_gateway.telemetry import Wanted, start, wanted
from aai_gateway.telemetry.otel import Outputs, Telemetry, outputs

pytestmark = pytest.mark.anyio

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
META = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01", "tracestate": "vendor=opaque"}
SECRET = "hunter2-do-not-export"


class Recorded:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.metrics = InMemoryMetricReader()

    def outputs(self) -> Outputs:
        return Outputs([SimpleSpanProcessor(self.spans)], [self.metrics])

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def points(self, name: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]


@pytest.fixture
def recorded(echo_gateway: Gateway) -> Recorded:
    outputs = Recorded()
    echo_gateway.telemetry = Telemetry(Wanted(("otlp",), ("otlp",), "a test"), echo_gateway, outputs.outputs())
    return outputs


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


async def test_a_call_is_a_span_under_the_clients_with_the_executors_work_under_it(
    echo_gateway: Gateway, recorded: Recorded
) -> None:
    echo_gateway.consent.store.allow("dev.aai.echo", "tracer")
    caller = Caller(name="tracer", transport="stdio", trace=META)
    assert await echo_gateway.call("dev.aai.echo", "echo", {"text": SECRET}, caller) == SECRET

    spans = recorded.finished()
    (call,) = [s for s in spans if s.name.startswith("execute_tool")]
    assert call.name == "execute_tool dev.aai.echo:echo"
    assert call.kind is SpanKind.SERVER
    assert call.context is not None
    assert call.parent is not None
    assert f"{call.context.trace_id:032x}" == TRACE_ID, "the client's trace goes on"
    assert f"{call.parent.span_id:016x}" == PARENT_ID
    assert call.parent.is_remote
    assert call.context.trace_state.get("vendor") == "opaque"
    found = attributes(call)
    record = echo_gateway.history.query(limit=None)[0]
    assert found == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "dev.aai.echo:echo",
        "gen_ai.tool.call.id": record.call_id,
        "mcp.method.name": "tools/call",
        "network.transport": "pipe",
        "aai.app": "dev.aai.echo",
        "aai.tool": "echo",
        "aai.caller": "tracer",
        "aai.transport": "stdio",
        "aai.outcome": "ok",
        "aai.duration_ms": found["aai.duration_ms"],
    }
    assert 0 < found["aai.duration_ms"] < 5000
    assert call.status.status_code is StatusCode.UNSET

    (executed,) = children(spans, call)
    assert executed.name == "execute dbus"
    assert attributes(executed) == {"aai.automation": "dbus", "aai.timeout_s": 30.0}
    assert executed.start_time is not None
    assert call.start_time is not None
    assert executed.end_time is not None
    assert call.start_time <= executed.start_time
    assert call.end_time is not None
    assert executed.end_time <= call.end_time
    everything = json.dumps([attributes(s) for s in spans])
    assert SECRET not in everything, "argument values stay out unless captureArguments asks"


async def test_failures_carry_their_error_type_and_the_metrics_count_them_per_app_and_tool(
    echo_gateway: Gateway, recorded: Recorded
) -> None:
    caller = Caller(name="cli", transport="cli")
    await echo_gateway.call("dev.aai.echo", "add", {"a": 1, "b": 2}, caller)
    await echo_gateway.call("dev.aai.echo", "add", {"a": 2}, caller)
    failures = [
        ("dev.aai.echo", "fail", {"message": "nope"}, "AUTOMATION_FAILED"),
        ("dev.aai.echo", "echo", {"txt": "x"}, "INVALID_PARAMS"),
        ("dev.aai.echo", "no_such_tool", {}, "TOOL_NOT_FOUND"),
        ("org.nowhere", "anything", {}, "APP_NOT_FOUND"),
    ]
    for app, tool, args, expected in failures:
        with pytest.raises(AaiError) as raised:
            await echo_gateway.call(app, tool, args, caller)
        assert raised.value.type == expected

    spans = [s for s in recorded.finished() if s.name.startswith("execute_tool")]
    assert len(spans) == 6
    for span in spans:
        assert span.kind is SpanKind.INTERNAL, "the command line is no MCP server"
        assert span.parent is None, "no traceparent: a trace of its own"
        assert "mcp.method.name" not in attributes(span)
    failed = {attributes(s)["aai.tool"]: s for s in spans if attributes(s)["aai.outcome"] == "error"}
    for _, tool, _, expected in failures:
        assert attributes(failed[tool])["error.type"] == expected
        assert failed[tool].status.status_code is StatusCode.ERROR
        assert failed[tool].status.description == expected
    (app_fails,) = children(recorded.finished(), failed["fail"])
    assert attributes(app_fails)["error.type"] == "AUTOMATION_FAILED", "the executor's span failed too"
    assert not children(recorded.finished(), failed["echo"]), "refused before any executor ran"

    calls = {
        (p.attributes["aai.app"], p.attributes["aai.tool"], p.attributes["aai.outcome"]): p.value
        for p in recorded.points("aai.gateway.calls")
    }
    assert calls == {
        ("dev.aai.echo", "add", "ok"): 2,
        ("dev.aai.echo", "fail", "error"): 1,
        ("dev.aai.echo", "echo", "error"): 1,
        ("dev.aai.echo", "_unknown", "error"): 1,
        ("_unknown", "_unknown", "error"): 1,
    }, "names no app or tool has are one label, so clients cannot make metrics grow without bound"
    errors = {
        (p.attributes["aai.app"], p.attributes["aai.tool"], p.attributes["error.type"]): p.value
        for p in recorded.points("aai.gateway.call.errors")
    }
    assert errors == {
        ("dev.aai.echo", "fail", "AUTOMATION_FAILED"): 1,
        ("dev.aai.echo", "echo", "INVALID_PARAMS"): 1,
        ("dev.aai.echo", "_unknown", "TOOL_NOT_FOUND"): 1,
        ("_unknown", "_unknown", "APP_NOT_FOUND"): 1,
    }
    durations = recorded.points("aai.gateway.call.duration")
    assert all(isinstance(p, HistogramDataPoint) for p in durations)
    adds = [p for p in durations if p.attributes["aai.tool"] == "add"]
    assert [p.count for p in adds] == [2]
    assert 0 < adds[0].sum < 10, "seconds"
    assert all(isinstance(p, NumberDataPoint) for p in recorded.points("aai.gateway.calls"))


async def test_a_consent_question_is_a_span_of_the_call(echo_gateway: Gateway, recorded: Recorded) -> None:
    asked: list[Question] = []

    async def ask(question: Question) -> Answer | None:
        asked.append(question)
        return Answer.ONCE

    caller = Caller(name="asker", transport="http", ask=ask)
    assert await echo_gateway.call("dev.aai.echo", "echo", {"text": "hi"}, caller) == "hi"
    assert len(asked) == 1
    spans = recorded.finished()
    (call,) = [s for s in spans if s.name.startswith("execute_tool")]
    assert attributes(call)["network.transport"] == "tcp"
    below = {s.name: s for s in children(spans, call)}
    assert set(below) == {"consent", "execute dbus"}
    assert attributes(below["consent"]) == {"aai.app": "dev.aai.echo", "aai.tool": "echo", "aai.consent.answer": "once"}
    assert below["consent"].end_time is not None
    assert below["execute dbus"].start_time is not None
    assert below["consent"].end_time <= below["execute dbus"].start_time, "asked before it ran"


async def test_captured_arguments_are_redacted_as_the_history_redacts_them(echo_gateway: Gateway) -> None:
    recorded = Recorded()
    want = Wanted(("otlp",), (), "a test", capture_arguments=True)
    echo_gateway.telemetry = Telemetry(want, echo_gateway, recorded.outputs())
    caller = Caller(name="cli", transport="cli")
    await echo_gateway.call("dev.aai.echo", "echo", {"text": "shown", "api_token": SECRET}, caller)
    with pytest.raises(AaiError):
        await echo_gateway.call("dev.aai.echo", "echo", {"password": SECRET}, caller)

    records = sorted(echo_gateway.history.query(limit=None), key=lambda r: r.time)
    spans = sorted(
        (s for s in recorded.finished() if s.name.startswith("execute_tool")), key=lambda s: s.start_time or 0
    )
    for span, record in zip(spans, records, strict=True):
        captured = json.loads(str(attributes(span)["gen_ai.tool.call.arguments"]))
        assert captured == record.args
        assert SECRET not in json.dumps(captured)
    assert json.loads(str(attributes(spans[0])["gen_ai.tool.call.arguments"])) == {"text": "shown", "api_token": MASK}


async def test_a_batch_makes_one_span_per_call_under_the_request(echo_gateway: Gateway, recorded: Recorded) -> None:
    caller = Caller(name="batcher", transport="cli", trace=META)
    calls = [{"app": "dev.aai.echo", "tool": "add", "args": {"a": i}} for i in range(3)]
    report = await echo_gateway.batch([*calls, {"app": "dev.aai.echo"}], caller)
    assert (report["ok"], report["error"]) == (3, 1)
    spans = [s for s in recorded.finished() if s.name.startswith("execute_tool")]
    assert len(spans) == 3, "a malformed entry is no call"
    assert {s.parent.span_id for s in spans if s.parent is not None} == {int(PARENT_ID, 16)}


@pytest.mark.parametrize(
    ("config", "env", "exports"),
    [
        ({}, {}, None),
        ({}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, (("otlp",), ("otlp",))),
        ({}, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, (("otlp",), ("otlp",))),
        ({}, {"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "none"}, (("console",), ())),
        ({}, {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, None),
        ({}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "TRUE"}, None),
        ({"enabled": False}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}, None),
        ({"enabled": True}, {}, (("otlp",), ("otlp",))),
        ({"endpoint": "http://127.0.0.1:4318"}, {"OTEL_METRICS_EXPORTER": "none"}, (("otlp",), ())),
        ({"endpoint": "http://127.0.0.1:4318"}, {"OTEL_SDK_DISABLED": "true"}, None),
        ({}, {"OTEL_SERVICE_NAME": "gw"}, None),
    ],
)
def test_what_switches_telemetry_on(
    config: dict[str, Any], env: dict[str, str], exports: tuple[tuple[str, ...], tuple[str, ...]] | None, tmp_path: Any
) -> None:
    (tmp_path / ".aai").mkdir()
    (tmp_path / ".aai" / "config.json").write_text(json.dumps({"telemetry": config}))
    settings = load_settings({"HOME": str(tmp_path)})
    found = wanted(settings, env)
    assert (None if found is None else (found.traces, found.metrics)) == exports


def test_console_exports_go_to_stderr_and_a_config_endpoint_gets_the_signal_paths() -> None:
    console = outputs(Wanted(("console",), ("console",), "a test"))
    assert console.destinations == ("stderr", "stderr")
    otlp = outputs(Wanted(("otlp",), (), "a test", endpoint="http://127.0.0.1:4318/"))
    assert otlp.destinations == ("http://127.0.0.1:4318 (OTLP/HTTP)", "nowhere")
    assert (len(otlp.processors), len(otlp.readers)) == (1, 0)
    for made in (console, otlp):
        for processor in made.processors:
            processor.shutdown()
        for reader in made.readers:
            reader.shutdown()


def test_config_headers_come_from_the_environment_and_stay_secret(tmp_path: Any) -> None:
    (tmp_path / ".aai").mkdir()
    headers = {"authorization": {"$env": "COLLECTOR_TOKEN"}, "x-tenant": "blue"}
    (tmp_path / ".aai" / "config.json").write_text(json.dumps({"telemetry": {"enabled": True, "headers": headers}}))
    settings = load_settings({"HOME": str(tmp_path), "COLLECTOR_TOKEN": "Bearer abc"})
    found = wanted(settings, {})
    assert found is not None
    assert found.headers == {"authorization": "Bearer abc", "x-tenant": "blue"}
    assert "abc" not in repr(settings)
    assert "abc" not in json.dumps(config_value(settings.telemetry_headers)), "as the web UI's settings page shows it"


async def test_without_the_sdk_one_warning_and_calls_go_on(
    echo_gateway: Gateway, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The otel extra not installed: its modules cannot be imported (as None in sys.modules makes them)."""
    monkeypatch.delitem(sys.modules, "aai_gateway.telemetry.otel", raising=False)
    for name in [n for n in sys.modules if n.startswith(("opentelemetry.sdk", "opentelemetry.exporter"))]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)
    caplog.set_level(logging.WARNING, logger="aai_gateway.telemetry")
    settings = echo_gateway.settings.with_changes(telemetry_enabled=True)
    assert start(settings, echo_gateway, {}) is None
    (warning,) = [r for r in caplog.records if r.name.startswith("aai_gateway.telemetry")]
    assert "telemetry.enabled" in warning.getMessage()
    assert "pip install 'aai-gateway[otel]'" in warning.getMessage()
    served = Gateway(settings)
    try:
        assert served.telemetry is None
        assert await served.call("dev.aai.echo", "add", {"a": 1}, Caller(name="cli", transport="cli")) == 2
    finally:
        await served.aclose()

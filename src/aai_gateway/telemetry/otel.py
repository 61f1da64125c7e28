"""Spans and metrics of the gateway's calls with the OpenTelemetry SDK (the `otel` extra).

The gateway keeps providers of its own rather than the process's global ones, so the MCP SDK's
built-in instrumentation stays a no-op and every transport (the SDK's path, the stdio and HTTP fast
paths, the command line) yields the same spans: one per call, named after the GenAI convention
`execute_tool {gen_ai.tool.name}`, the tool being `<appId>:<tool>`; under it one span for the
executor's work and one for each consent question put. Its parent is the client's span when the
request carried a W3C `traceparent` in `params._meta` (SEP-414).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, StatusCode, get_current_span, use_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from aai_gateway import __version__
from aai_gateway.consent import Answer, Ask, Question
from aai_gateway.consent.rounds import InputNeeded
from aai_gateway.errors import AaiError
from aai_gateway.executors import Executor, ToolCall
from aai_gateway.telemetry.switch import Described, Wanted
from aai_gateway.text import printable

log = logging.getLogger(__name__)

SCOPE = "aai_gateway"
DEFAULT_SERVICE = "aai-gateway"
UNKNOWN = "_unknown"
"""The app or tool label of metrics for calls naming no app or tool the gateway has."""
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
"""Seconds: an operation takes from under a millisecond (DBus) to minutes (a consent question)."""
NETWORK = {"stdio": "pipe", "http": "tcp"}
EXIT_SECONDS = 1.5
"""How long the gateway waits at exit for the last spans and metrics to be exported: a collector that
is down or never answers must not hold the exit (the exporters would retry for many seconds)."""
_PROPAGATOR = TraceContextTextMapPropagator()


@dataclass(frozen=True, slots=True)
class Outputs:
    """Where spans and metrics go: the exporters `Wanted` names, or others (tests' in-memory ones)."""

    processors: Sequence[SpanProcessor]
    readers: Sequence[MetricReader]
    destinations: tuple[str, str] = ("nowhere", "nowhere")
    exporters: Sequence[Counted] = ()
    """The span exporters, counting what they exported, for the exit to say what was dropped."""


def outputs(want: Wanted) -> Outputs:
    """The exporters `want` names; `console` writes to stderr, since stdout may be the MCP connection."""
    base = want.endpoint.rstrip("/") if want.endpoint else None
    headers = dict(want.headers) or None
    exporters = [
        Counted(
            OTLPSpanExporter(endpoint=f"{base}/v1/traces" if base else None, headers=headers)
            if name == "otlp"
            else ConsoleSpanExporter(out=sys.stderr)
        )
        for name in want.traces
    ]
    processors: list[SpanProcessor] = [BatchSpanProcessor(exporter) for exporter in exporters]
    readers: list[MetricReader] = [
        PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=f"{base}/v1/metrics" if base else None, headers=headers)
            if name == "otlp"
            else ConsoleMetricExporter(out=sys.stderr)
        )
        for name in want.metrics
    ]
    where = f"{base or 'the OTEL_EXPORTER_OTLP_* endpoint'} (OTLP/HTTP)"
    traces, metrics = (
        ", ".join(where if n == "otlp" else "stderr" for n in names) or "nowhere"
        for names in (want.traces, want.metrics)
    )
    return Outputs(processors, readers, (traces, metrics), exporters)


class Counted(SpanExporter):
    """A span exporter that counts the spans it exported."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.sent = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            with self._lock:
                self.sent += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class Ended(SpanProcessor):
    """Counts the spans ended, the number every exporter is to export."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self.count += 1


class Telemetry:
    """One gateway's tracer and instruments; `call` wraps one call of an operation in its span."""

    def __init__(self, want: Wanted, gateway: Described, chosen: Outputs | None = None) -> None:
        self.want = want
        self.gateway = gateway
        self.outputs = chosen or outputs(want)
        resource = Resource.create({SERVICE_VERSION: __version__})
        if want.service_name:
            resource = resource.merge(Resource({SERVICE_NAME: want.service_name}))
        elif str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
            resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE}))
        self.tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.ended = Ended()
        self.tracer_provider.add_span_processor(self.ended)
        for processor in self.outputs.processors:
            self.tracer_provider.add_span_processor(processor)
        self.meter_provider = MeterProvider(
            resource=resource, metric_readers=self.outputs.readers, shutdown_on_exit=False
        )
        self.tracer = self.tracer_provider.get_tracer(SCOPE, __version__)
        meter = self.meter_provider.get_meter(SCOPE, __version__)
        self.calls = meter.create_counter("aai.gateway.calls", "{call}", "Calls of an app's operation")
        self.errors = meter.create_counter("aai.gateway.call.errors", "{call}", "Calls that failed, by error type")
        self.duration = meter.create_histogram(
            "aai.gateway.call.duration", "s", "How long calls took", explicit_bucket_boundaries_advisory=BUCKETS
        )

    def destinations(self) -> tuple[str, str]:
        return self.outputs.destinations

    @contextmanager
    def call(
        self,
        call_id: str,
        app_id: str,
        tool_name: str,
        args: Any,
        *,
        caller: str,
        transport: str,
        meta: Mapping[str, Any] | None,
    ) -> Iterator[CallSpan]:
        """The span of one call, current while the call runs; its outcome is what the call raises."""
        app, tool = printable(app_id), printable(tool_name)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": f"{app}:{tool}",
            "gen_ai.tool.call.id": call_id,
            "aai.app": app,
            "aai.tool": tool,
            "aai.caller": printable(caller),
            "aai.transport": transport,
        }
        if transport in NETWORK:
            attributes["mcp.method.name"] = "tools/call"
            attributes["network.transport"] = NETWORK[transport]
        if self.want.capture_arguments:
            recorded = self.gateway.recorded_arguments(app_id, tool_name, args)
            attributes["gen_ai.tool.call.arguments"] = json.dumps(recorded, ensure_ascii=False, default=str)
        kind = SpanKind.SERVER if transport in NETWORK else SpanKind.INTERNAL
        span = self.tracer.start_span(
            f"execute_tool {app}:{tool}", parent_of(meta), kind, attributes, record_exception=False
        )
        started = time.perf_counter()
        outcome, error = "ok", None
        try:
            with use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                yield CallSpan(self)
        except AaiError as exc:
            outcome, error = "error", exc.type
            raise
        except asyncio.CancelledError:
            outcome, error = "cancelled", "CANCELLED"
            raise
        except InputNeeded:  # the call ended to ask the user (MCP 2026-07-28); its retry is a span of its own
            outcome = "input_required"
            raise
        except BaseException as exc:
            outcome, error = "error", type(exc).__qualname__
            raise
        finally:
            seconds = time.perf_counter() - started
            span.set_attributes({"aai.outcome": outcome, "aai.duration_ms": round(seconds * 1000, 3)})
            if error is not None:
                span.set_attribute("error.type", error)
                span.set_status(StatusCode.ERROR, error)
            span.end()
            self._count(app_id, tool_name, transport, outcome, error=error, seconds=seconds)

    def _count(
        self, app_id: str, tool_name: str, transport: str, outcome: str, *, error: str | None, seconds: float
    ) -> None:
        app, tool = printable(app_id), printable(tool_name)
        if error is not None and not self.gateway.known(app_id, tool_name):
            app, tool = (app, UNKNOWN) if self.gateway.known(app_id, "") else (UNKNOWN, UNKNOWN)
        labels = {"aai.app": app, "aai.tool": tool, "aai.transport": transport, "aai.outcome": outcome}
        self.calls.add(1, labels)
        self.duration.record(seconds, {"aai.app": app, "aai.tool": tool, "aai.outcome": outcome})
        if error is not None:
            self.errors.add(1, {"aai.app": app, "aai.tool": tool, "error.type": error})

    def executor(self, executor: Executor) -> Executor:
        """`executor` with a span around each run of it, under the call's: a wrapper for running calls only,
        so the gateway keeps `executor` itself for all else it does (an MCP server's tools and statuses)."""
        return TracedExecutor(executor, self)

    async def aclose(self) -> None:
        """Export what is still held, then stop (in a thread: exporting blocks)."""
        await asyncio.to_thread(self.shutdown)

    def shutdown(self, seconds: float = EXIT_SECONDS) -> None:
        """Export what is still held for at most `seconds`, then stop; say in the log what was dropped.

        The exporting goes on in a daemon thread, which the process's exit does not wait for."""
        done = threading.Event()

        def stop() -> None:
            try:
                self.tracer_provider.shutdown()
                self.meter_provider.shutdown(timeout_millis=seconds * 1000)
            finally:
                done.set()

        threading.Thread(target=stop, name="telemetry-exit", daemon=True).start()
        finished = done.wait(seconds)
        lost = max((self.ended.count - e.sent for e in self.outputs.exporters), default=0)
        traces, metrics = self.destinations()
        if not finished:
            log.warning(
                "telemetry: the last spans and metrics were not exported within %g s of exit, dropped: "
                "%d of %d spans for %s, and the metrics since the last export for %s",
                seconds,
                lost,
                self.ended.count,
                traces,
                metrics,
            )
        elif lost:
            log.warning("telemetry: %d of %d spans were never exported to %s", lost, self.ended.count, traces)


class CallSpan:
    """The call's span, for the gateway to hang the consent questions of the call under."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    def asking(self, ask: Ask) -> Ask:
        """`ask` with a span around each question put and the wait for its answer."""
        tracer = self.telemetry.tracer

        async def traced(question: Question) -> Answer | None:
            attributes = {"aai.app": question.app, "aai.tool": question.tool}
            with tracer.start_as_current_span("consent", attributes=attributes) as span:
                answer = await ask(question)
                span.set_attribute("aai.consent.answer", answer.value if answer is not None else "none")
                return answer

        return traced


class TracedExecutor:
    """An executor whose every run is a span (`execute <automation>`) under the call's."""

    def __init__(self, inner: Executor, telemetry: Telemetry) -> None:
        self.inner = inner
        self.tracer = telemetry.tracer

    async def execute(self, call: ToolCall) -> Any:
        attributes: dict[str, Any] = {"aai.automation": call.binding.automation, "aai.timeout_s": call.timeout}
        span = self.tracer.start_span(
            f"execute {call.binding.automation}", attributes=attributes, record_exception=False
        )
        try:
            with use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                return await self.inner.execute(call)
        except AaiError as exc:
            span.set_attribute("error.type", exc.type)
            span.set_status(StatusCode.ERROR, exc.type)
            raise
        finally:
            span.end()

    async def aclose(self) -> None:
        await self.inner.aclose()


def parent_of(meta: Mapping[str, Any] | None) -> Context:
    """The client's span from a request's `_meta` (`traceparent`, `tracestate`), else an empty context:
    a call without one starts a trace of its own."""
    if isinstance(meta, Mapping):
        carrier = {key: meta[key] for key in ("traceparent", "tracestate") if isinstance(meta.get(key), str)}
        if "traceparent" in carrier:
            found = _PROPAGATOR.extract(carrier)
            if get_current_span(found).get_span_context().is_valid:
                return found
    return Context()

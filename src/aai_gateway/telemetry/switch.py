"""Whether to export telemetry, and how: the config's `telemetry` section over the `OTEL_*` variables.

Off when `OTEL_SDK_DISABLED` is true or `telemetry.enabled` is false. Otherwise on when
`telemetry.enabled` is true, `telemetry.endpoint` is set, one of the OTLP endpoint variables is set,
or `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER` names an exporter other than `none`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from aai_gateway import paths
from aai_gateway.config import Settings

if TYPE_CHECKING:
    from aai_gateway.telemetry.otel import Telemetry

log = logging.getLogger(__name__)

ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
EXPORTERS = frozenset({"otlp", "console", "none"})
PROTOCOL = "http/protobuf"


class Described(Protocol):
    """What the telemetry asks the gateway about a call: its arguments as the history records them,
    and whether its app and tool exist (metrics label unknown ones alike, to bound their number)."""

    def recorded_arguments(self, app_id: str, tool_name: str, args: Any) -> Any: ...

    def known(self, app_id: str, tool_name: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class Wanted:
    """What to export: each signal's exporters ("otlp", "console"), where, and as what service."""

    traces: tuple[str, ...]
    metrics: tuple[str, ...]
    why: str
    """What switched telemetry on, for the log."""
    endpoint: str | None = None
    """The OTLP/HTTP base URL from config.json; None: the exporter reads the OTEL_EXPORTER_OTLP_* variables."""
    headers: Mapping[str, str] = field(default_factory=dict)
    service_name: str | None = None
    capture_arguments: bool = False


def wanted(settings: Settings, env: Mapping[str, str]) -> Wanted | None:
    """The telemetry the settings and environment ask for, or None when they ask for none."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if settings.telemetry_enabled is False:
        return None
    traces = _exporters(env, "OTEL_TRACES_EXPORTER")
    metrics = _exporters(env, "OTEL_METRICS_EXPORTER")
    why = (
        ("telemetry.enabled" if settings.telemetry_enabled else None)
        or ("telemetry.endpoint" if settings.telemetry_endpoint else None)
        or next((name for name in ENDPOINTS if env.get(name)), None)
        or next((n for n in ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER") if _named(env, n)), None)
    )
    if why is None or not (traces or metrics):
        return None
    protocol = env.get("OTEL_EXPORTER_OTLP_PROTOCOL", PROTOCOL)
    if protocol != PROTOCOL:
        log.warning("OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported; exporting with %s", protocol, PROTOCOL)
    return Wanted(
        traces=traces,
        metrics=metrics,
        why=why,
        endpoint=settings.telemetry_endpoint,
        headers={name: secret.reveal() for name, secret in settings.telemetry_headers.items()},
        service_name=settings.telemetry_service_name,
        capture_arguments=settings.telemetry_capture_arguments,
    )


def _named(env: Mapping[str, str], name: str) -> bool:
    """Whether the variable names an exporter (not only `none`)."""
    return bool(env.get(name)) and _exporters(env, name) != ()


def _exporters(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """The exporters a variable lists (comma-separated, by default otlp); unknown ones are warned of."""
    listed = [part.strip().lower() for part in env.get(name, "otlp").split(",") if part.strip()]
    for unknown in sorted(set(listed) - EXPORTERS):
        log.warning(
            "%s: unknown exporter '%s' left out; this gateway exports with otlp, console or none", name, unknown
        )
    if "none" in listed:
        return ()
    return tuple(dict.fromkeys(e for e in listed if e in EXPORTERS))


def start(settings: Settings, gateway: Described, env: Mapping[str, str] | None = None) -> Telemetry | None:
    """The telemetry of a gateway, or None when not configured (nothing of OpenTelemetry imported).

    Configured without the SDK installed: one warning, and the gateway serves without it."""
    want = wanted(settings, paths.environ() if env is None else env)
    if want is None:
        return None
    try:
        from aai_gateway.telemetry.otel import Telemetry  # noqa: PLC0415 - only when configured: the SDK is heavy
    except ImportError as exc:
        log.warning(
            "telemetry is switched on by %s, but the OpenTelemetry SDK is not installed (no module %s): "
            "no traces or metrics are exported; install it with: pip install 'aai-gateway[otel]'",
            want.why,
            exc.name,
        )
        return None
    telemetry = Telemetry(want, gateway)
    log.info("telemetry on (%s): exporting traces to %s, metrics to %s", want.why, *telemetry.destinations())
    return telemetry

"""OpenTelemetry traces and metrics of the gateway's calls: optional, and free when not configured.

`start` decides from the config's `telemetry` section and the standard `OTEL_*` variables whether
to export. Only then is `telemetry.otel`, and with it the OpenTelemetry SDK, imported; otherwise the
gateway holds None and a call costs one check of it.
"""

from aai_gateway.telemetry.switch import Described, Wanted, start, wanted

__all__ = ["Described", "Wanted", "start", "wanted"]

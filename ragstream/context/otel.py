"""Optional OpenTelemetry export: one span per finished stage, built from the stage events.

Off by default; `telemetry.otel` = `console` or `otlp` (endpoint from the usual OTEL_EXPORTER_OTLP_*
variables) turns it on when the OpenTelemetry SDK is installed.
"""

from __future__ import annotations

from typing import Any

from ragstream.errors import ConfigError
from ragstream.settings import TelemetrySettings


class OtelSpans:
    def __init__(self, exporter: Any) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor

        self.provider = TracerProvider(resource=Resource.create({"service.name": "ragstream"}))
        self.provider.add_span_processor(SimpleSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("ragstream")

    @classmethod
    def from_settings(cls, settings: TelemetrySettings) -> OtelSpans | None:
        if settings.otel == "none":
            return None
        try:
            if settings.otel == "console":
                from opentelemetry.sdk.trace.export import ConsoleSpanExporter

                return cls(ConsoleSpanExporter())
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            return cls(OTLPSpanExporter())
        except ImportError as exc:
            raise ConfigError(f"telemetry.otel = {settings.otel!r} needs the OpenTelemetry SDK and exporter: {exc}") from exc

    def record(self, thread_id: str, event: dict[str, Any]) -> None:
        if event.get("event") not in ("stage_finish", "stage_error"):
            return
        end_ns = int(event["ts"] * 1e9)
        start_ns = end_ns - int(event.get("duration_ms", 0) * 1e6)
        span = self.tracer.start_span(f"stage.{event['stage']}", start_time=start_ns)
        span.set_attribute("ragstream.thread", thread_id)
        for key, value in (event.get("counts") or {}).items():
            span.set_attribute(f"ragstream.{key}", value)
        for key, value in (event.get("retrieval") or {}).items():
            span.set_attribute(f"ragstream.retrieval.{key}", value)
        if event["event"] == "stage_error":
            span.set_attribute("error.type", event["error"])
        span.end(end_time=end_ns)

"""Optional OpenTelemetry export of a run: a root span per call, a span per stage, a span per LLM call.

Off by default; `telemetry.otel` = `console` or `otlp` (endpoint from the usual OTEL_EXPORTER_OTLP_*
variables) turns it on; it needs the `otel` extra (`pip install -e ".[otel]"`). Spans are built from
the stage and LLM events the graph already emits, and exported by a batch processor, so tracing
adds no work to the stages themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ragstream.errors import ConfigError
from ragstream.settings import TelemetrySettings


class OtelSpans:
    def __init__(self, exporter: Any, batch: bool = True) -> None:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        self._trace = trace
        self.provider = TracerProvider(resource=Resource.create({"service.name": "ragstream"}))
        self.provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("ragstream")
        self._root: Any = None
        self._stages: dict[str, Any] = {}

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
            raise ConfigError(
                f"telemetry.otel = {settings.otel!r} needs the OpenTelemetry SDK and exporter "
                f'(pip install -e ".[otel]"): {exc}'
            ) from exc

    @contextmanager
    def run(self, thread_id: str, call: str) -> Iterator[None]:
        """The root span of one controller call (a run, a step, a resume, a send)."""
        self._root = self.tracer.start_span(f"ragstream.{call}", attributes={"ragstream.thread": thread_id})
        try:
            yield
        finally:
            for span in self._stages.values():
                span.end()
            self._stages.clear()
            self._root.end()
            self._root = None

    def _child_of(self, parent: Any) -> Any:
        return self._trace.set_span_in_context(parent) if parent is not None else None

    def record(self, event: dict[str, Any]) -> None:
        kind, ts = event.get("event"), int(event.get("ts", 0) * 1e9)
        if kind == "stage_start":
            self._stages[event["stage"]] = self.tracer.start_span(
                f"stage.{event['stage']}", context=self._child_of(self._root), start_time=ts or None
            )
        elif kind in ("stage_finish", "stage_error"):
            span = self._stages.pop(event["stage"], None)
            if span is None:
                return
            for key, value in (event.get("counts") or {}).items():
                span.set_attribute(f"ragstream.{key}", value)
            for key, value in (event.get("retrieval") or {}).items():
                span.set_attribute(f"ragstream.retrieval.{key}", value)
            if kind == "stage_error":
                span.set_attribute("error.type", event["error"])
            span.end(end_time=ts or None)
        elif kind in ("llm_call", "offline_step"):  # an offline step is no LLM call: its own span name
            parent = next(reversed(self._stages.values()), self._root)
            start = ts - int(event.get("latency_ms", 0) * 1e6) if ts else None
            prefix = "llm" if kind == "llm_call" else "offline"
            span = self.tracer.start_span(
                f"{prefix}.{event.get('model', '?')}", context=self._child_of(parent), start_time=start
            )
            for key in ("provider", "tokens_in", "tokens_out", "attempts"):
                if event.get(key) is not None:
                    span.set_attribute(f"ragstream.llm.{key}", event[key])
            span.end(end_time=ts or None)

    def flush(self) -> None:
        self.provider.force_flush()

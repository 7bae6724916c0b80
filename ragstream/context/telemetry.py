"""Stage events and the per-thread telemetry trace.

Nodes and the LLM client emit events through LangGraph's custom stream, so `stream()` callers and
the LangGraph server's SSE clients see the same events; outside a graph run, `emit` does nothing.
A `TraceStore` keeps every event of a thread in an append-only JSONL file, secrets redacted.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from langgraph.config import get_stream_writer

from ragstream.redact import redact
from ragstream.text.dates import SNAPSHOT_SUFFIX

_COLLECTING: ContextVar[list[dict[str, Any]] | None] = ContextVar("ragstream_collecting", default=None)


@contextmanager
def collect_llm_calls() -> Iterator[list[dict[str, Any]]]:
    """The `llm_call` events emitted inside the block (pool threads included: they run in a copy of
    this context), so a node can record what its stage spent in the run's metadata."""
    calls: list[dict[str, Any]] = []
    token = _COLLECTING.set(calls)
    try:
        yield calls
    finally:
        _COLLECTING.reset(token)


def emit(event: dict[str, Any]) -> None:
    """Send an event to the running graph's custom stream (no-op outside a run)."""
    collecting = _COLLECTING.get()
    if collecting is not None and event.get("event") == "llm_call":
        collecting.append(event)
    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    writer({"ts": round(time.time(), 3), **event})


def price_key(prices: dict[str, dict[str, float]], model: str) -> str | None:
    """The price-table entry for a model the server reports: the name itself, a fine-tune's base model,
    or a dated snapshot's model (`gpt-4.1-mini-2025-04-14`). None: not priced (a local server's model)."""
    base = model.split(":")[1] if model.startswith("ft:") and ":" in model else model
    for name in (model, base, SNAPSHOT_SUFFIX.sub("", base)):
        if name in prices:
            return name
    return None


def cost_estimate(prices: dict[str, dict[str, float]], model: str, tokens_in: int, tokens_out: int) -> float | None:
    """USD from the price table (per 1M tokens) for the model the server reported; None when unpriced."""
    key = price_key(prices, model)
    if key is None:
        return None
    price = prices[key]
    return round(tokens_in * price["input"] / 1e6 + tokens_out * price["output"] / 1e6, 8)


class TraceStore:
    """One JSONL trace per thread under `<data root>/traces/`; lines are appended and fsync'd."""

    def __init__(self, folder: Path, secrets: list[str | None], patterns: list[str] | None = None) -> None:
        self.folder = folder
        self.secrets = secrets
        self.patterns = [re.compile(p) for p in patterns or []]
        self._lock = threading.Lock()

    def path(self, thread_id: str) -> Path:
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in thread_id)
        return self.folder / f"{safe}.jsonl"

    def append(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        if not events:
            return
        lines = "".join(
            redact(json.dumps(e, ensure_ascii=False, default=str), self.secrets, self.patterns) + "\n" for e in events
        )
        with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.path(thread_id), "a", encoding="utf-8") as handle:
                handle.write(lines)
                handle.flush()
                os.fsync(handle.fileno())

    def read(self, thread_id: str) -> list[dict[str, Any]]:
        try:
            text = self.path(thread_id).read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        events = []
        for line in text.splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line torn by a crash is skipped, the rest stays readable
        return events


def summarize(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-stage durations and counts, LLM totals and errors: what `ragstream trace` and the GUI show."""
    stages: dict[str, dict[str, Any]] = {}
    llm = {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
    offline_steps = 0
    errors = []
    for e in events:
        kind = e.get("event")
        if kind == "stage_finish":
            stages[e["stage"]] = {k: v for k, v in e.items() if k not in ("event", "ts")}
        elif kind == "llm_call":
            llm["calls"] += 1
            llm["tokens_in"] += e.get("tokens_in", 0)
            llm["tokens_out"] += e.get("tokens_out", 0)
            llm["cost_usd"] += e.get("cost_usd") or 0.0
        elif kind == "offline_step":
            offline_steps += 1
        elif kind == "stage_error":
            errors.append(e)
    return {"stages": stages, "llm": llm, "offline_steps": offline_steps, "errors": errors}

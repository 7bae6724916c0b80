"""Stage and LLM events, sent where a running graph's stream readers see them.

Nodes and the LLM client emit events through LangGraph's custom stream, so `stream()` callers and
the LangGraph server's SSE clients see the same events; outside a graph run, `emit` does nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langgraph.config import get_stream_writer

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

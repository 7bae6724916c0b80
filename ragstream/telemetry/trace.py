"""The per-thread telemetry trace: every event of a thread in an append-only JSONL file, secrets
redacted, and the summary `ragstream trace` and the GUI show."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from ragstream.secrets.redact import redact


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

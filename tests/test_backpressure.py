"""Backpressure: when the provider rate-limits, sessions slow down and finish; none fails or hangs."""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from ragstream.app.controller import AppController
from ragstream.errors import LLMCallError
from ragstream.llm.client import LLMClient
from ragstream.orchestration.checkpoint import sqlite_checkpointer
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from tests.openai_server import FakeOpenAIServer, Reply

QUESTIONS = [
    "ingestion manifests",
    "reciprocal rank fusion",
    "the A4 pause",
    "excerpt fences",
    "SQLite checkpoints",
    "BM25 stemming",
    "the fallback ladder",
    "token budgets",
]


class WindowLimit:
    """At most `per_window` requests per `window_s` seconds; any other gets a 429 with Retry-After."""

    def __init__(self, per_window: int, window_s: float) -> None:
        self.per_window = per_window
        self.window_s = window_s
        self.recent: deque[float] = deque()
        self.limited = 0
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply | None:
        with self.lock:
            now = time.monotonic()
            while self.recent and now - self.recent[0] > self.window_s:
                self.recent.popleft()
            if len(self.recent) < self.per_window:
                self.recent.append(now)
                return None
            self.limited += 1
            return Reply(status=429, headers={"retry-after": f"{self.window_s:g}"})


def test_eight_sessions_against_a_rate_limited_provider_all_finish(openai_on_indexed, tmp_path) -> None:
    # One retry for real failures: without the shared gate and the patience for 429s, the many
    # rate-limited calls here would exhaust it and sessions would fail.
    server, settings = openai_on_indexed(
        **{
            "llm.max_retries": 1,
            "llm.backoff_initial_s": 0.05,
            "llm.backoff_max_s": 1.0,
            "llm.timeout_s": 10,
            "llm.rate_limit_patience_s": 60,
        }
    )
    limit = WindowLimit(per_window=4, window_s=0.25)
    server.fault = limit
    services = Services(settings)
    checkpointer = sqlite_checkpointer(tmp_path / "sessions.sqlite")

    def session(i: int) -> str:
        ctl = AppController(settings, services=services, checkpointer=checkpointer, thread_id=f"user-{i}")
        ctl.select_project("demo")
        return ctl.run_full_pipeline(f"# Task\nExplain {QUESTIONS[i]} (user {i}).", pause_after="none").prompt_ready

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(session, i) for i in range(8)]
        prompts = [future.result(timeout=300) for future in futures]  # a hang fails here, not forever
    assert limit.limited >= 8, "the server should have rate-limited this load"
    for i, prompt in enumerate(prompts):
        assert f"(user {i})" in prompt
        assert all(f"(user {j})" not in prompt for j in range(8) if j != i)


def _client(server: FakeOpenAIServer, tmp_path, **overrides: object) -> LLMClient:
    settings: Settings = load_settings(
        overrides={
            "data_dir": str(tmp_path / "data"),
            "llm.provider": "openai",
            "llm.base_url": server.url,
            "llm.api_key": "sk-test-local-server-0000",
            "llm.timeout_s": 2,
            "llm.max_retries": 0,
            "llm.backoff_initial_s": 0.01,
            "llm.backoff_max_s": 0.5,
            **overrides,
        }
    )
    return LLMClient.from_settings(settings)


def test_a_rate_limit_seen_by_one_call_holds_back_the_others(openai_server: FakeOpenAIServer, tmp_path) -> None:
    limited = threading.Event()  # set once, by the server's thread
    arrivals: list[float] = []

    def first_is_limited(request: dict[str, Any]) -> Reply | None:
        arrivals.append(time.monotonic())
        if not limited.is_set():
            limited.set()
            return Reply(status=429, headers={"retry-after": "0.5"})
        return Reply(content="{}")

    openai_server.fault = first_is_limited
    messages = [{"role": "user", "content": "hi"}]
    first, second = _client(openai_server, tmp_path), _client(openai_server, tmp_path)  # two sessions' clients
    with ThreadPoolExecutor(max_workers=1) as pool:
        waiting = pool.submit(first.call, "gpt-4.1-mini", messages)
        deadline = time.monotonic() + 5
        while first.provider.gate.closed_for() == 0 and time.monotonic() < deadline:  # its 429 has come back
            time.sleep(0.005)
        second.call("gpt-4.1-mini", messages)
        assert waiting.result(timeout=10).attempts == 2
    assert arrivals[1] - arrivals[0] >= 0.45, "the other session's call waited for the Retry-After"


def test_a_rate_limit_outlasting_the_patience_is_a_typed_error(openai_server: FakeOpenAIServer, tmp_path) -> None:
    openai_server.fault = lambda request: Reply(status=429, headers={"retry-after": "0.1"})
    client = _client(openai_server, tmp_path, **{"llm.rate_limit_patience_s": 0.5})
    with pytest.raises(LLMCallError) as info:
        client.call("gpt-4.1-mini", [{"role": "user", "content": "hi"}])
    assert info.value.status == 429 and "still rate limited" in str(info.value)
    assert 2 <= len(openai_server.requests) <= 10, "waited out several Retry-Afters, then stopped"

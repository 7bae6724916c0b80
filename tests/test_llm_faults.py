"""LLM faults injected at every LLM stage: a successful retry, an offline stand-in, or a typed error, state unchanged,
no hang."""

from __future__ import annotations

import json
import time

import pytest

from ragstream.app.controller import AppController
from ragstream.errors import RagstreamError
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.services import Services
from ragstream.stages import Stage
from ragstream.stages.rules import ORDER
from tests.openai_server import Reply

PROMPT = "# Task\nHow are changed documents re-embedded?\n# Odd heading\nbody\n# Format\nbullet list"
LLM_STAGES = [Stage.PREPROCESS, Stage.A2, Stage.A3, Stage.A4, Stage.A5]  # Agent 00 runs inside PreProcessing

FAULTS = {
    "429_retry_after": ([Reply(status=429, headers={"retry-after": "0.05"})], "ok"),
    "500_then_ok": ([Reply(status=500)], "ok"),
    "timeout_then_ok": ([Reply(delay_s=0.8, content="{}")], "ok"),
    "repeated_500": ([Reply(status=500)] * 6, "error"),
    "truncated_body": ([Reply(raw_body='{"id": "x", "choices": [{"index"')] * 6, "error"),
    "non_json_body": ([Reply(raw_body="<html>gateway</html>")] * 6, "error"),
    # A reply the schema rejects is re-asked once, then the stage's offline behaviour stands in for it.
    "schema_violating": ([Reply(content=json.dumps({"unexpected": 1}))] * 6, "ok"),
}


@pytest.fixture()
def fault_env(openai_on_indexed):
    return openai_on_indexed(
        **{"llm.timeout_s": 0.5, "llm.max_retries": 1, "llm.backoff_initial_s": 0.01, "llm.backoff_max_s": 0.1}
    )


@pytest.mark.parametrize("stage", LLM_STAGES, ids=lambda s: s.value)
@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_at_stage(stage: Stage, fault: str, fault_env) -> None:
    server, settings = fault_env
    if stage is Stage.A3:  # a model only adds what the evidence drops: here it drops every candidate, all asked
        gate = settings.gate.model_copy(update={"min_evidence": 10.0, "weak_evidence": -10.0})
        settings = settings.model_copy(update={"gate": gate})
    ctl = AppController(settings, checkpointer=memory_checkpointer(), services=Services(settings))
    ctl.select_project("demo")
    if stage is not Stage.PREPROCESS:
        ctl.preprocess(PROMPT)
        for earlier in ORDER[2 : ORDER.index(stage)]:
            ctl.run_stage(earlier)
    before = ctl.sp.model_dump_json()
    replies, expected = FAULTS[fault]
    server.script.clear()
    server.push(*replies)
    started = time.monotonic()
    if expected == "ok":
        after = ctl.run_stage(stage, PROMPT)
        assert after.stage is stage
        assert len(server.requests) >= 2  # the fault was met, then retried
    else:
        with pytest.raises(RagstreamError):
            ctl.run_stage(stage, PROMPT)
        assert ctl.sp.model_dump_json() == before
        assert ctl.last_error
    assert time.monotonic() - started < 30  # every call has a deadline

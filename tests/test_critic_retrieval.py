"""Critic-triggered retrieval against the local OpenAI-protocol server: a critic that rejects once for
missing information makes a recorded retrieval, and the regeneration's request holds the new excerpts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragstream.app.controller import AppController
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.services import Services
from tests.openai_server import schema_responder

PROMPT = "# Task\nHow are changed documents re-embedded?"
MISSING = "which error code the token budget check returns over the ceiling"
REJECT = {
    "grounded": "yes",
    "complete": "no",
    "follows_format": "yes",
    "feedback": "say what happens when the budget is exceeded",
    "missing": MISSING,
}
ACCEPT = {"grounded": "yes", "complete": "yes", "follows_format": "yes", "feedback": "", "missing": ""}


def _is_critic(request: dict[str, Any]) -> bool:
    return "RAGstream critic" in json.dumps(request.get("messages", []))


@pytest.mark.slow
@pytest.mark.parametrize("retries", [1, 0])
def test_a_rejection_for_missing_information_retrieves_and_the_regeneration_sees_it(
    openai_on_indexed, retries: int
) -> None:
    server, settings = openai_on_indexed(
        **{"llm.timeout_s": 5, "llm.max_retries": 0, "send.critic_max_retries": retries}
    )
    verdicts = [REJECT, ACCEPT]
    drafts = [
        "Changed files are re-embedded on ingest.",
        "Changed files are re-embedded; over budget: ERR_BUDGET_4711.",
    ]

    def respond(request: dict[str, Any]) -> str:
        if request.get("stream"):
            return drafts.pop(0)
        if _is_critic(request):
            return json.dumps(verdicts.pop(0))
        return schema_responder(request)

    server.responder = respond
    ctl = AppController(settings, checkpointer=memory_checkpointer(), services=Services(settings))
    ctl.select_project("demo")
    ctl.run_full_pipeline(PROMPT, pause_after="none")
    assert "ERR_BUDGET_4711" not in ctl.sp.prompt_ready, "the built prompt lacks what the critic will find missing"
    answer = ctl.send()
    first = answer.attempts[0]
    assert first.critique["missing"] == MISSING and first.accepted is False
    if retries == 0:  # no regeneration will follow: nothing is retrieved for it
        assert first.retrieval is None and len(answer.attempts) == 1
        return
    record = first.retrieval
    assert record is not None and record.query == MISSING and record.failure == ""
    assert record.confidence is not None and record.strategy
    assert (
        record.kept and set(record.kept) <= set(record.candidates) and set(record.decisions) == set(record.candidates)
    )
    assert any(cid.startswith("budget.py@") for cid in record.kept)
    assert "ERR_BUDGET_4711" in record.excerpts_md
    streamed = [r for r in server.requests if r.get("stream")]
    assert len(streamed) == 2
    regeneration = streamed[1]["messages"][-1]["content"]
    assert "ERR_BUDGET_4711" in regeneration and record.excerpts_md in regeneration
    assert "ERR_BUDGET_4711" not in json.dumps(streamed[0]["messages"])
    assert answer.accepted and answer.retries == 1
    assert any(e["event"] == "critic_retrieval" and e["query"] == MISSING for e in ctl.trace())

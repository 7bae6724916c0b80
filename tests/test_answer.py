"""The answer and critic as graph nodes: tokens on LangGraph's messages stream, a critic loop, one path."""

from __future__ import annotations

import json
import threading

import pytest

from ragstream.app.controller import AppController
from ragstream.errors import LLMNotConfiguredError
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.orchestration.graph import build_graph
from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.stages.options import RunOptions
from tests.openai_server import schema_responder

PROMPT = "# Task\nHow are changed documents re-embedded?"
REJECT = {"grounded": "no", "complete": "yes", "follows_format": "yes", "feedback": "cite the excerpt ids"}
ACCEPT = {"grounded": "yes", "complete": "yes", "follows_format": "yes", "feedback": ""}


class Model:
    """A model that drafts twice and a critic that rejects the first draft (keyed by request, so
    concurrent agent calls cannot take the wrong reply)."""

    def __init__(self) -> None:
        self.drafts = iter(["First draft without citations", "Second draft [ingestion.md@x#0]"])
        self.verdicts = iter([REJECT, ACCEPT])
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> str:
        with self.lock:
            if request.get("stream"):
                return next(self.drafts)
            if request.get("response_format", {}).get("json_schema", {}).get("name") == "CRITIC_v1":
                return json.dumps(next(self.verdicts))
        return schema_responder(request)


@pytest.fixture()
def llm(openai_on_indexed):
    server, settings = openai_on_indexed(**{"send.critic_max_retries": 2})
    server.responder = Model()
    return server, settings


def test_graph_stream_carries_the_answer_tokens_and_the_critic_loops_once(llm) -> None:
    server, settings = llm
    graph = build_graph(memory_checkpointer())
    cfg = {"configurable": {"thread_id": "a"}}
    context = RunOptions(project="demo", send=True, pause_after="none", services=Services(settings))
    tokens, nodes = [], []
    for mode, data in graph.stream({"prompt": PROMPT}, cfg, context=context, stream_mode=["messages", "updates"]):
        if mode == "messages":
            chunk, metadata = data
            assert metadata["langgraph_node"] == "answer"  # agents' structured replies never stream
            tokens.append(chunk.content)
        else:
            nodes += list(data)
    assert "".join(tokens) == "First draft without citations" + "Second draft [ingestion.md@x#0]"
    assert len(tokens) > 4
    assert nodes[-4:] == ["answer", "critic", "answer", "critic"]
    final = graph.get_state(cfg).values["answer"]
    assert final["done"] and final["attempts"][-1]["accepted"] and final["attempts"][0]["accepted"] is False
    regenerate = [r for r in server.requests if r.get("stream")][1]
    assert "cite the excerpt ids" in regenerate["messages"][-1]["content"]


def test_controller_run_with_send_is_the_same_path(llm) -> None:
    _, settings = llm
    ctl = AppController(settings, checkpointer=memory_checkpointer(), services=Services(settings))
    ctl.select_project("demo")
    tokens: list[str] = []
    sp = ctl.run_full_pipeline(PROMPT, pause_after="none", send=True, on_token=tokens.append)
    assert sp.stage.value == "built" and sp.answer is not None and sp.answer.accepted
    assert "".join(tokens).endswith(sp.answer.text)
    assert ctl.services.memory.turns("demo")[-1].answer == sp.answer.text
    rebuilt = ctl.build_prompt()
    assert rebuilt.answer is None  # an answer belongs to the prompt it answered


def test_asking_to_send_without_an_llm_fails_before_any_stage(indexed: Settings) -> None:
    graph = build_graph(memory_checkpointer())
    cfg = {"configurable": {"thread_id": "offline"}}
    with pytest.raises(LLMNotConfiguredError, match="no LLM is configured"):
        graph.invoke({"prompt": PROMPT}, cfg, context=RunOptions(project="demo", send=True, services=Services(indexed)))
    assert graph.get_state(cfg).values.get("stage") is None

"""Driving the compiled graph directly is as safe as the controller: bad context is an InputError
before any work, the thread's values do not change, and only the provider retries LLM calls."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragstream.app.controller import AppController
from ragstream.errors import InputError, LLMCallError, ProjectError, RagstreamError
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.orchestration.graph import build_graph
from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.stages.options import RunOptions
from tests.openai_server import Reply

PROMPT = (Path(__file__).resolve().parents[1] / "examples" / "prompt.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def services(indexed: Settings) -> Services:
    return Services(indexed)


@pytest.fixture(scope="module")
def paused(services: Services):
    """One thread paused after A4; every bad run below is tried on it and must leave it as it is."""
    graph = build_graph(memory_checkpointer())
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"prompt": PROMPT}, cfg, context=RunOptions(project="demo", services=services), interrupt_after=["a4"])
    return graph, cfg


@pytest.mark.parametrize(
    ("context", "error", "message"),
    [
        ({"project": "demo", "strategy": "BOGUS"}, InputError, "use one of"),
        ({"project": "demo", "skip": ["a4"]}, InputError, "only"),
        ({"project": "demo", "history_profile": "everything"}, InputError, "history_profile"),
        ({"project": "demo", "colour": "blue"}, InputError, "unknown run context keys"),
        (
            {"project": "demo", "stratgy": "TEMPORAL"},
            InputError,
            r"unknown run context keys \['stratgy'\]: use \[.*'strategy'",
        ),
        ({"project": "demo", "send": "yes"}, InputError, "send: Input should be a valid boolean"),
        ({"project": "../etc"}, ProjectError, "invalid project name"),
        ({"project": "nowhere"}, ProjectError, "no project 'nowhere'"),
        ("demo", InputError, "must be an object"),
    ],
)
def test_bad_context_is_an_input_error_and_changes_nothing(context, error, message, services: Services, paused) -> None:
    graph, cfg = paused
    before = graph.get_state(cfg).values
    if isinstance(context, dict):
        context = {**context, "services": services} if "colour" not in context else context
    with pytest.raises(error, match=message):
        graph.invoke({"prompt": PROMPT + "\nagain"}, cfg, context=context)
    after = graph.get_state(cfg).values
    assert {k: v for k, v in after.items() if k != "prompt"} == {k: v for k, v in before.items() if k != "prompt"}


@pytest.mark.parametrize("prompt", [42, ["a", "list"], {"a": "dict"}, True])
def test_a_prompt_that_is_not_text_is_an_input_error_and_the_paused_thread_still_resumes(
    prompt, services: Services
) -> None:
    graph = build_graph(memory_checkpointer())
    cfg = {"configurable": {"thread_id": "t"}}
    context = RunOptions(project="demo", services=services)
    graph.invoke({"prompt": PROMPT}, cfg, context=context, interrupt_after=["a4"])
    with pytest.raises(InputError, match="the prompt must be text"):
        graph.invoke({"prompt": prompt}, cfg, context=context)
    assert graph.get_state(cfg).values["stage"] == "a4"  # readable, and the review is still there
    graph.update_state(cfg, None, as_node="__end__")
    final = graph.invoke(
        {"prompt": PROMPT}, cfg, context=RunOptions(project="demo", pause_after="none", services=services)
    )
    assert final["stage"] == "built"


def test_one_retry_layer_a_failing_call_never_repeats_the_calls_that_succeeded(openai_on_indexed) -> None:
    server, settings = openai_on_indexed(
        **{"llm.max_retries": 2, "llm.backoff_initial_s": 0.01, "llm.backoff_max_s": 0.05},
        # a call per passage: all in the band, and all dropped by the evidence, so each is the model's to add
        **{"gate.model_batch": 1, "gate.weak_evidence": -10.0, "gate.strong_evidence": 10.0, "gate.min_evidence": 10.0},
    )
    ctl = AppController(settings, checkpointer=memory_checkpointer(), services=Services(settings))
    ctl.select_project("demo")
    ctl.preprocess(PROMPT)
    for stage in ("retrieval", "rerank"):
        ctl.run_stage(stage)
    candidates = ctl.sp.final_selection_ids
    texts = [ctl.sp.chunk_by_id()[cid].text for cid in candidates]
    words = [set(re.findall(r"[A-Za-z]{5,}", text)) for text in texts]
    poisoned = sorted(words[1] - set().union(*words[:1], *words[2:]))[0]  # a word only the second passage has

    def a3_request(body: dict) -> bool:
        return body.get("response_format", {}).get("json_schema", {}).get("name") == "A3_v2"

    server.fault = lambda body: Reply(status=500) if a3_request(body) and poisoned in json.dumps(body) else None
    server.requests.clear()
    with pytest.raises(LLMCallError, match="gave up after 3 attempts"):
        ctl.run_a3()
    a3_calls = [json.dumps(r) for r in server.requests if a3_request(r)]
    failing = [r for r in a3_calls if poisoned in r]
    assert len(failing) == 3  # the provider's attempts, and no node-level retry on top
    assert len(a3_calls) - len(failing) <= len(candidates) - 1  # every other passage judged at most once


def test_an_auto_run_without_a_project_fails_before_any_work(services: Services) -> None:
    graph = build_graph(memory_checkpointer())
    cfg = {"configurable": {"thread_id": "fresh"}}
    with pytest.raises(ProjectError, match="no project selected"):
        graph.invoke({"prompt": PROMPT}, cfg, context=RunOptions(services=services))
    assert graph.get_state(cfg).values.get("stage") is None


CONTROLLER_BAD_RUNS = {
    "empty prompt": ("   ", {}, "EmptyPromptError", "the prompt is empty"),
    "unknown project": (PROMPT, {"project": "nowhere"}, "ProjectError", "no project 'nowhere'"),
    "path trick": (PROMPT, {"project": "../../etc"}, "ProjectError", "invalid project name"),
    "unknown strategy": (PROMPT, {"strategy": "BOGUS"}, "InputError", "unknown retrieval strategy"),
    "unknown skip": (PROMPT, {"skip": ["a4"]}, "InputError", "cannot skip"),
}


@pytest.mark.parametrize("paused", [False, True], ids=["finished", "paused at A4"])
@pytest.mark.parametrize("bad", list(CONTROLLER_BAD_RUNS))
def test_a_bad_run_through_the_controller_leaves_the_thread_as_it_was(
    bad: str, paused: bool, services: Services
) -> None:
    ctl = AppController(services.settings, checkpointer=memory_checkpointer(), services=services)
    ctl.select_project("demo")
    ctl.run_full_pipeline(PROMPT, pause_after="a4" if paused else "none")
    before, waiting = ctl.sp.model_dump_json(), ctl.paused_before
    prompt, options, error, message = CONTROLLER_BAD_RUNS[bad]
    with pytest.raises(RagstreamError, match=message) as info:
        ctl.run_full_pipeline(prompt, **{"pause_after": "a4", **options})
    assert type(info.value).__name__ == error
    assert ctl.sp.model_dump_json() == before and ctl.paused_before == waiting
    assert ctl.active_project == "demo" and ctl.options.strategy is None and ctl.options.skip == []
    if paused:
        ctl.edit(s_ctx_md="### Facts\n- EDITED AFTER A FAILED RUN")
        assert "EDITED AFTER A FAILED RUN" in ctl.resume().prompt_ready

"""The LangGraph workflow through the AppController: manual = auto, pause/edit/resume, failures, history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragstream.app.controller import AppController
from ragstream.errors import InputError, LLMCallError, RagstreamError, StageOrderError
from ragstream.orchestration.checkpoint import memory_checkpointer, sqlite_checkpointer
from ragstream.orchestration.review import review_name
from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.stages import REGISTRY, stage_module
from ragstream.stages.rules import ORDER
from ragstream.stages.spec import StageSpec
from ragstream.state import Stage, SuperPrompt

PROMPT = (Path(__file__).resolve().parents[1] / "examples" / "prompt.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def services(indexed: Settings) -> Services:
    return Services(indexed)


def _controller(services: Services, **kw) -> AppController:
    ctl = AppController(
        services.settings, services=services, checkpointer=kw.pop("checkpointer", memory_checkpointer()), **kw
    )
    ctl.select_project("demo")
    return ctl


def comparable(sp: SuperPrompt) -> dict:
    """The SuperPrompt as JSON, without wall-clock timings and the thread it ran on."""
    data = json.loads(sp.model_dump_json())
    (data["extras"].get("retrieval") or {}).pop("timings_ms", None)
    data["run_metadata"].pop("trace_id")
    return data


def _manual(ctl: AppController) -> SuperPrompt:
    ctl.preprocess(PROMPT)
    for method in (
        ctl.run_a2,
        ctl.run_retrieval,
        ctl.run_reranker,
        ctl.run_a3,
        ctl.run_a4,
        ctl.run_a5,
        ctl.build_prompt,
    ):
        method()
    return ctl.sp


def test_auto_run_equals_eight_manual_stage_calls(services: Services) -> None:
    manual = _manual(_controller(services))
    auto_ctl = _controller(services)
    auto = auto_ctl.run_full_pipeline(PROMPT, pause_after="none")
    assert auto.stage is Stage.BUILD
    assert auto.history_of_stages == list(ORDER[1:])
    assert comparable(auto) == comparable(manual)
    assert auto_ctl.paused_before == []


def test_pause_after_a4_edit_and_resume(services: Services) -> None:
    ctl = _controller(services)
    paused = ctl.run_full_pipeline(PROMPT)
    assert paused.stage is Stage.A4 and ctl.paused_before == ["review"]
    original = paused.s_ctx_md
    assert original and "### Facts" in original
    keep = paused.final_selection_ids[:1]
    ctl.edit(s_ctx_md="### Facts\n- HUMAN-EDITED CONTEXT LINE", final_selection_ids=keep)
    assert ctl.paused_before == ["a5"]  # the review took the edit; A5 is next
    built = ctl.resume()
    assert built.stage is Stage.BUILD
    assert "HUMAN-EDITED CONTEXT LINE" in built.prompt_ready
    assert original not in built.prompt_ready
    assert built.history_of_stages.count(Stage.A4) == 1  # A4 did not run again
    assert built.final_selection_ids == keep
    assert built.prompt_ready.count("excerpt source=") == 1
    assert [(e.stage, e.fields) for e in built.extras.edits] == [("a4", ["S_CTX_MD", "final_selection_ids"])]


def test_an_edit_under_the_seeds_name_is_the_same_edit_at_the_review_and_after_the_build(services: Services) -> None:
    """`edit(S_CTX_MD=...)` under the seed name, as callers wrote it before the rename, edits `s_ctx_md`; both
    edits are recorded under the public (seed) name."""
    seed, today = _controller(services), _controller(services)
    seed.run_full_pipeline(PROMPT)
    today.run_full_pipeline(PROMPT)
    seed.edit(S_CTX_MD="### Facts\n- EDITED AT THE REVIEW")  # seed name
    today.edit(s_ctx_md="### Facts\n- EDITED AT THE REVIEW")
    assert comparable(seed.resume()) == comparable(today.resume())
    seed.edit(S_CTX_MD="### Facts\n- EDITED AFTER THE BUILD")  # seed name
    today.edit(s_ctx_md="### Facts\n- EDITED AFTER THE BUILD")
    built = seed.build_prompt()
    assert comparable(built) == comparable(today.build_prompt())
    assert "EDITED AFTER THE BUILD" in built.prompt_ready and built.s_ctx_md.endswith("EDITED AFTER THE BUILD")
    assert [e.fields for e in built.extras.edits] == [["S_CTX_MD"], ["S_CTX_MD"]]


def test_the_review_interrupt_refuses_bad_answers_keeps_waiting_then_takes_a_good_one(services: Services) -> None:
    ctl = _controller(services)
    paused = ctl.run_full_pipeline(PROMPT)
    review = ctl.waiting
    assert review["kind"] == "review" and review["after"] == "a4" and review["S_CTX_MD"] == paused.s_ctx_md
    assert [c["id"] for c in review["chunks"]] == paused.final_selection_ids
    for bad, message in (
        ({"final_selection_ids": ["nope"]}, "unknown chunk ids"),
        ({"S_CTX_MD": 3}, "S_CTX_MD"),
        ({}, "accept"),
        ({"prompt_ready": "x"}, "cannot be edited"),
    ):
        with pytest.raises(InputError, match=message):
            ctl.resume(bad)
        assert ctl.waiting == review and comparable(ctl.sp) == comparable(paused)
    keep = paused.final_selection_ids[-1:]
    built = ctl.resume({"final_selection_ids": keep})
    assert built.stage is Stage.BUILD and built.final_selection_ids == keep and ctl.waiting is None
    assert built.prompt_ready.count("excerpt source=") == 1 and f'chunk="{keep[0]}"' in built.prompt_ready
    with pytest.raises(InputError, match="cannot be written directly"):  # a raw write of a derived field
        ctl.graph.update_state(ctl._cfg, {"stage": "build", "prompt_ready": "FORGED"}, as_node="a4")
    assert ctl.sp.prompt_ready == built.prompt_ready


def test_prompt_ready_after_a5_shows_the_format_spec(services: Services) -> None:
    ctl = _controller(services)
    ctl.preprocess(PROMPT)
    for method in (ctl.run_a2, ctl.run_retrieval, ctl.run_reranker, ctl.run_a3):
        method()
    at_a4 = ctl.run_a4()
    assert "## Output format" not in at_a4.prompt_ready
    at_a5 = ctl.run_a5()
    assert at_a5.extras.a5 is not None and at_a5.extras.a5.rules
    assert "## Output format" in at_a5.prompt_ready and at_a5.extras.a5.rules[0] in at_a5.prompt_ready


def test_edit_rejects_unknown_chunks_and_fields(services: Services) -> None:
    ctl = _controller(services)
    ctl.run_full_pipeline(PROMPT)
    before = comparable(ctl.sp)
    with pytest.raises(InputError, match="unknown chunk ids"):
        ctl.edit(final_selection_ids=["nope"])
    with pytest.raises(InputError, match="cannot be edited"):
        ctl.edit(prompt_ready="sneaky")
    assert comparable(ctl.sp) == before


def test_illegal_order_is_a_typed_error_and_changes_nothing(services: Services) -> None:
    ctl = _controller(services)
    with pytest.raises(StageOrderError):
        ctl.run_retrieval()
    ctl.preprocess(PROMPT)
    before = ctl.sp.model_dump_json()
    for call in (ctl.run_reranker, ctl.run_a4, ctl.build_prompt):
        with pytest.raises(StageOrderError):
            call()
        assert ctl.sp.model_dump_json() == before
    assert ctl.last_error and "cannot run now" in ctl.last_error


def test_rerun_a2_after_build_keeps_retrieval_and_reopens_a5(services: Services) -> None:
    ctl = _controller(services)
    built = ctl.run_full_pipeline(PROMPT, pause_after="none")
    again = ctl.run_a2()
    assert again.stage is Stage.A4 and again.history_of_stages[-1] is Stage.A2
    assert again.base_context_chunks == built.base_context_chunks
    assert again.s_ctx_md == built.s_ctx_md
    assert again.extras.a5 is None and not again.attachments_md  # they read the labels A2 just rewrote
    assert ctl.run_a5().stage is Stage.A5
    assert ctl.build_prompt().stage is Stage.BUILD


def test_a2_at_the_pause_then_resume_goes_on_to_a5_and_keeps_the_edits(services: Services) -> None:
    ctl = _controller(services)
    paused = ctl.run_full_pipeline(PROMPT)
    keep = paused.final_selection_ids[:1]
    ctl.edit(s_ctx_md=f"- the person's own line\n- cited [{keep[0]}]", final_selection_ids=keep)
    relabelled = ctl.run_a2()
    assert relabelled.stage is Stage.A4 and ctl.paused_before == []
    built = ctl.resume()
    assert built.history_of_stages[-3:] == [Stage.A2, Stage.A5, Stage.BUILD]
    assert "the person's own line" in built.prompt_ready and built.final_selection_ids == keep


@pytest.mark.parametrize("spec", REGISTRY, ids=[s.name for s in REGISTRY])
def test_stage_failure_leaves_checkpoint_identical(spec: StageSpec, services: Services, monkeypatch) -> None:
    ctl = _controller(services)
    stage = Stage(spec.name)
    if stage is not Stage.PREPROCESS:
        ctl.preprocess(PROMPT)
        for earlier in ORDER[2 : ORDER.index(stage)]:
            ctl.run_stage(earlier)
    before = ctl.sp.model_dump_json()

    def fail(*args, **kwargs):
        raise LLMCallError("injected failure", status=400)

    monkeypatch.setattr(stage_module(stage), "run", fail)
    with pytest.raises(RagstreamError, match="injected failure"):
        ctl.run_stage(stage, PROMPT + "\nchanged")
    assert ctl.sp.model_dump_json() == before
    assert ctl.last_error and "injected failure" in ctl.last_error
    assert ctl.errors[-1]["error"] == "LLMCallError"


def test_skip_options_and_invalid_skip(services: Services) -> None:
    ctl = _controller(services)
    sp = ctl.run_full_pipeline(PROMPT, pause_after="none", skip=["a2", "a3", "a5"])
    assert sp.stage is Stage.BUILD
    assert sp.history_of_stages == [Stage.PREPROCESS, Stage.RETRIEVAL, Stage.RERANK, Stage.A4, Stage.BUILD]
    with pytest.raises(InputError, match="cannot skip both"):
        ctl.run_full_pipeline(PROMPT, skip=["rerank", "a3"])


def test_pause_after_every_stage(services: Services) -> None:
    ctl = _controller(services)
    sp = ctl.run_full_pipeline(PROMPT, pause_after="all")
    seen = [sp.stage]
    while ctl.paused_before:
        assert ctl.paused_before == [review_name(seen[-1])] and ctl.waiting["after"] == seen[-1].value
        seen.append(ctl.resume().stage)
    assert seen == [*ORDER[1:], Stage.BUILD]  # a review after every stage (its own node), the build's included


def test_an_edit_at_the_builds_review_takes_the_drawn_path_back_to_a5(services: Services) -> None:
    """`review_build -> a5` is drawn because a run takes it: a label edited at the build's review re-runs A5."""
    ctl = _controller(services)
    ctl.run_full_pipeline(PROMPT, pause_after=["build"])
    assert ctl.paused_before == ["review_build"]
    stages: list[str] = []
    ctl.on_event = lambda event: stages.append(event["stage"]) if event.get("event") == "stage_start" else None
    built = ctl.resume({"tone": "terse"})
    assert stages == ["a5", "build"] and built.stage is Stage.BUILD and built.body.tone == "terse"


def test_history_and_time_travel(services: Services) -> None:
    ctl = _controller(services)
    ctl.run_full_pipeline(PROMPT, pause_after="none")
    rows = ctl.history()
    assert rows[0]["stage"] == "built"
    at_a3 = next(r for r in rows if r["stage"] == "a3")
    sp = ctl.restart_from(at_a3["checkpoint_id"])
    assert sp.stage is Stage.A3 and not sp.s_ctx_md
    assert ctl.run_a4().stage is Stage.A4
    with pytest.raises(InputError):
        ctl.restart_from("no-such-checkpoint")


def test_sqlite_checkpoint_resumed_by_a_new_controller(services: Services, tmp_path: Path) -> None:
    db = tmp_path / "ck.sqlite"
    first = _controller(services, checkpointer=sqlite_checkpointer(db))
    first.run_full_pipeline(PROMPT)
    second = _controller(services, checkpointer=sqlite_checkpointer(db), thread_id=first.thread_id)
    assert second.paused_before == ["review"]
    resumed = second.resume()
    uninterrupted = _controller(services).run_full_pipeline(PROMPT, pause_after="none")
    assert comparable(resumed) == comparable(uninterrupted)

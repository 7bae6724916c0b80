"""The SuperPrompt is consistent after any sequence of actions (hypothesis stateful testing).

Random legal and illegal sequences of stage calls, re-runs, auto runs with pauses and skips, resumes,
answers to the review interrupt (good and bad), edits at any point (condensed context, chunk unticking,
labels), and restarts from history, all
through the AppController on real SQLite checkpoints. After every step:

- `prompt_ready` is the render of the state;
- no output of a stage after the frontier is in the state (reports, views, fields) or the prompt;
- `final_selection_ids` is the latest valid view, and every chunk cited in s_ctx_md is in it;
- a refused call changed nothing, and a refused review answer leaves the review waiting.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ragstream.app.controller import AppController
from ragstream.errors import RagstreamError
from ragstream.orchestration.apply import settle
from ragstream.orchestration.checkpoint import sqlite_checkpointer
from ragstream.rendering.view import render_prompt
from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.stages import REGISTRY, SKIPPABLE
from ragstream.stages.rules import NAMES, rank
from ragstream.state import SuperPrompt
from ragstream.text.chunk_ids import CITATION

pytestmark = pytest.mark.slow

PROMPTS = [
    (Path(__file__).resolve().parents[1] / "examples" / "prompt.md").read_text(encoding="utf-8"),
    "# Task\nHow are changed documents re-embedded?\n# Format\nbullet list",
    "What does the Prompt Builder fence, and why?",
]
SKIPS = [[], ["a2"], ["a3"], ["rerank"], ["a5"], ["a2", "a5"]]
EXAMPLES = int(os.environ.get("RAGSTREAM_STATEFUL_EXAMPLES", "200"))


def consistency_problems(sp: SuperPrompt) -> list[str]:
    """Every invariant the state must hold, as readable problems (empty when consistent)."""
    problems = []
    if sp.prompt_ready != render_prompt(sp):
        problems.append("prompt_ready is not the render of the state")
    for spec in REGISTRY:
        if rank(spec.name) <= rank(sp.stage):
            continue
        if getattr(sp.extras, spec.name) is not None:
            problems.append(f"report of {spec.name} beyond the frontier {sp.stage.value}")
        if spec.name in sp.views_by_stage:
            problems.append(f"view of {spec.name} beyond the frontier")
        problems += [f"{name} of {spec.name} beyond the frontier" for name in spec.fields if getattr(sp, name)]
    view = sp.current_view()
    if sp.final_selection_ids != (view[1] if view else []):
        problems.append("final_selection_ids is not the latest valid view")
    selected = set(sp.final_selection_ids)
    problems += [
        f"s_ctx_md cites {cid}, which is not selected" for cid in CITATION.findall(sp.s_ctx_md) if cid not in selected
    ]
    if settle(sp):
        problems.append(f"settle would still change {sorted(settle(sp))}")
    return problems


@pytest.fixture(scope="module")
def machine_env(indexed: Settings, tmp_path_factory: pytest.TempPathFactory):
    return Services(indexed), sqlite_checkpointer(tmp_path_factory.mktemp("stateful") / "ck.sqlite")


def test_superprompt_stays_consistent_under_any_sequence(machine_env) -> None:
    services, checkpointer = machine_env

    class Pipeline(RuleBasedStateMachine):
        @initialize()
        def start(self) -> None:
            self.ctl = AppController(
                services.settings, services=services, checkpointer=checkpointer, thread_id=uuid.uuid4().hex
            )
            self.ctl.select_project("demo")

        def attempt(self, call, *args, **kwargs) -> bool:
            """Run a controller call; when it is refused, nothing may have changed."""
            before = self.ctl.sp.model_dump_json()
            try:
                call(*args, **kwargs)
                return True
            except RagstreamError:
                assert self.ctl.sp.model_dump_json() == before, f"a refused {call.__name__} changed the state"
                return False

        @rule(prompt=st.sampled_from(PROMPTS))
        def preprocess(self, prompt: str) -> None:
            self.attempt(self.ctl.preprocess, prompt)

        @rule(stage=st.sampled_from(NAMES[1:]))
        def run_stage(self, stage: str) -> None:
            self.attempt(self.ctl.run_stage, stage)

        @rule(
            prompt=st.sampled_from(PROMPTS), pause=st.sampled_from(["a4", "none", "all"]), skip=st.sampled_from(SKIPS)
        )
        def run_all(self, prompt: str, pause: str, skip: list[str]) -> None:
            assert set(skip) <= SKIPPABLE
            self.attempt(self.ctl.run_full_pipeline, prompt, pause_after=pause, skip=skip)

        @rule()
        def resume(self) -> None:
            self.attempt(self.ctl.resume)

        @rule(data=st.data())
        def edit_condensed(self, data: st.DataObject) -> None:
            ids = [c.id for c in self.ctl.sp.base_context_chunks] + ["gone.md@0123456789#9"]
            lines = data.draw(
                st.lists(
                    st.tuples(
                        st.sampled_from(["a fact", "a person's note", "## heading"]),
                        st.lists(st.sampled_from(ids), max_size=2),
                    ),
                    max_size=4,
                )
            )
            text = "\n".join(f"- {words} " + " ".join(f"[{cid}]" for cid in cited) for words, cited in lines)
            self.attempt(self.ctl.edit, s_ctx_md=text)

        @precondition(lambda self: bool(self.ctl.sp.base_context_chunks))
        @rule(data=st.data())
        def untick_chunks(self, data: st.DataObject) -> None:
            ids = [c.id for c in self.ctl.sp.base_context_chunks]
            keep = data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids)))
            self.attempt(self.ctl.edit, final_selection_ids=keep)

        @rule(
            field=st.sampled_from(["audience", "tone", "format", "depth"]),
            value=st.sampled_from(["students", "terse", "a table"]),
        )
        def edit_label(self, field: str, value: str) -> None:
            self.attempt(self.ctl.edit, **{field: value})

        @rule(field=st.sampled_from(["task", "prompt_ready", "stage"]))
        def illegal_edit(self, field: str) -> None:
            self.attempt(self.ctl.edit, **{field: "sneaky"})

        @precondition(lambda self: (self.ctl.waiting or {}).get("kind") == "review")
        @rule(data=st.data(), by_edit=st.booleans())
        def answer_review(self, data: st.DataObject, by_edit: bool) -> None:
            """Answer the review interrupt (through `resume(answer)` or `edit`), well or badly."""
            waiting = self.ctl.waiting
            ids = [c["id"] for c in waiting["chunks"]] + ["gone.md@0123456789#9"]
            answer = data.draw(
                st.one_of(
                    st.just({"accept": True}),
                    st.fixed_dictionaries({"final_selection_ids": st.lists(st.sampled_from(ids), unique=True)}),
                    st.fixed_dictionaries({"s_ctx_md": st.sampled_from(["- a reviewer's fact", 3])}),
                    st.fixed_dictionaries({"tone": st.sampled_from(["terse", None])}),
                    st.just({"stage": "build"}),
                    st.just({}),
                )
            )
            call = (lambda: self.ctl.edit(**answer)) if by_edit else (lambda: self.ctl.resume(answer))
            if not self.attempt(call):
                assert self.ctl.waiting == waiting, "a refused answer did not leave the review waiting"
            elif answer.get("final_selection_ids") is not None:
                assert self.ctl.sp.final_selection_ids == answer["final_selection_ids"]

        @precondition(lambda self: len(self.ctl.history()) > 1)
        @rule(data=st.data())
        def restart_from_history(self, data: st.DataObject) -> None:
            rows = self.ctl.history()
            row = data.draw(st.sampled_from(rows))
            self.attempt(self.ctl.restart_from, row["checkpoint_id"])

        @invariant()
        def consistent(self) -> None:
            if hasattr(self, "ctl"):
                assert consistency_problems(self.ctl.sp) == []

    Pipeline.TestCase.settings = settings(
        max_examples=EXAMPLES,
        stateful_step_count=8,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    Pipeline.TestCase().runTest()

"""The RAGstream graph: eight nodes over the SuperPrompt, in the legal stage order.

Every node is a thin adapter: it checks the stage rules, calls one stage module with services from
the runtime context, and returns only the fields that changed. Manual and auto runs use the same
graph: auto runs flow edge to edge (pausing via `interrupt_after`), manual runs aim at one node with
`update_state(..., as_node=<previous node>)` and stop right after it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from ragstream.agents.a2_prompt_shaper import run_a2
from ragstream.agents.a3_nli_gate import run_a3
from ragstream.agents.a4_condenser import run_a4
from ragstream.agents.a5_format_enforcer import run_a5
from ragstream.errors import InputError, LLMCallError, RetrievalError
from ragstream.orchestration.prompt_builder import build_prompt
from ragstream.orchestration.telemetry import emit
from ragstream.preprocessing import preprocess
from ragstream.prompt_view import normalized_ask
from ragstream.retrieval.stage import run_reranker, run_retrieval
from ragstream.retrieval.strategy import Strategy
from ragstream.services import Services, default_services
from ragstream.state import Stage, SuperPrompt, check_stage_allowed

log = logging.getLogger("ragstream.graph")

# (node name, stage it produces), in pipeline order.
NODES: tuple[tuple[str, Stage], ...] = (
    ("preprocess", Stage.PREPROCESSED),
    ("a2", Stage.A2),
    ("retrieval", Stage.RETRIEVAL),
    ("reranker", Stage.RERANKED),
    ("a3", Stage.A3),
    ("a4", Stage.A4),
    ("a5", Stage.A5),
    ("build", Stage.BUILT),
)
NODE_FOR_STAGE: dict[Stage, str] = {stage: name for name, stage in NODES}
STAGE_FOR_NODE: dict[str, Stage] = {name: stage for name, stage in NODES}
PREVIOUS_NODE: dict[str, str] = {name: (NODES[i - 1][0] if i else START) for i, (name, _) in enumerate(NODES)}
# Stages an auto run may skip (controller spec §6.2); A4 then needs the ReRanker or A3.
SKIPPABLE = frozenset({"a2", "reranker", "a3", "a5"})


@dataclass
class RunContext:
    """Per-run options and services; never part of the checkpointed state.

    `user_text` lets a caller start PreProcessing without first writing the prompt into the state,
    so a rejected prompt leaves the checkpoint untouched; API clients may send `raw_prompt` as input.
    """

    project: str | None = None
    user_text: str | None = None
    strategy: str | None = None
    skip: list[str] = field(default_factory=list)
    include_undecided: bool | None = None
    history_profile: str | None = None
    services: Services | None = None

    def validate(self) -> None:
        unknown = set(self.skip) - SKIPPABLE
        if unknown:
            raise InputError(f"cannot skip {sorted(unknown)}: only {sorted(SKIPPABLE)} may be skipped")
        if {"reranker", "a3"} <= set(self.skip):
            raise InputError("cannot skip both the ReRanker and A3: the Condenser needs one of them")
        if self.history_profile not in (None, "none", "recent", "relevant"):
            raise InputError(f"history_profile must be none, recent or relevant, not {self.history_profile!r}")
        if self.strategy is not None and self.strategy not in Strategy.__members__:
            raise InputError(f"unknown retrieval strategy {self.strategy!r}: use one of {list(Strategy.__members__)}")


def _project(sp: SuperPrompt, ctx: RunContext) -> str:
    project = ctx.project or sp.extras.get("project")
    if not project:
        raise RetrievalError("no project selected: choose the project whose documents to retrieve from")
    return str(project)


StageFn = Callable[[SuperPrompt, Services, RunContext], SuperPrompt]

STAGE_FNS: dict[str, StageFn] = {
    "preprocess": lambda sp, s, ctx: _with_project(
        preprocess(
            ctx.user_text if ctx.user_text is not None else sp.raw_prompt,
            s.settings,
            previous=sp,
            mapper=s.header_mapper,
            include_undecided=ctx.include_undecided,
            chunker=s.chunker,
        ),
        ctx.project or sp.extras.get("project"),
        s,
    ),
    "a2": lambda sp, s, ctx: run_a2(sp, s.factory, s.llm),
    "retrieval": lambda sp, s, ctx: run_retrieval(
        sp,
        s.retrieval(_project(sp, ctx)),
        Strategy(ctx.strategy) if ctx.strategy else None,
        _history(sp, s, ctx),
    ),
    "reranker": lambda sp, s, ctx: run_reranker(sp, s.reranker, s.retrieval(_project(sp, ctx))),
    "a3": lambda sp, s, ctx: run_a3(sp, s.factory, s.llm),
    "a4": lambda sp, s, ctx: run_a4(sp, s.factory, s.llm, s.budget),
    "a5": lambda sp, s, ctx: run_a5(sp, s.factory, s.llm),
    "build": lambda sp, s, ctx: build_prompt(sp, s.budget),
}


def _with_project(sp: SuperPrompt, project: str | None, services: Services) -> SuperPrompt:
    """Remember the project in the state and load its conversation memory into recentConversation."""
    if not project:
        return sp
    return sp.model_copy(
        update={"extras": {**sp.extras, "project": project}, "recentConversation": services.memory.context(project)}
    )


def _history(sp: SuperPrompt, services: Services, ctx: RunContext) -> list:
    """Past turns relevant to the ask, when the run's history profile is `relevant`."""
    if ctx.history_profile != "relevant":
        return []
    retrieval = services.settings.retrieval
    return services.memory.relevant_chunks(
        _project(sp, ctx), normalized_ask(sp), services.retrieval(_project(sp, ctx)).embedder, 3, retrieval.fallback_min_score
    )


def changed_fields(before: SuperPrompt, after: SuperPrompt) -> dict[str, Any]:
    """Only the fields a stage changed: that is the node's write to the checkpoint."""
    return {name: getattr(after, name) for name in SuperPrompt.model_fields if getattr(after, name) != getattr(before, name)}


def stage_figures(before: SuperPrompt, after: SuperPrompt, services: Services) -> dict[str, Any]:
    """Counts, token estimate and retrieval mode for a stage_finish event."""
    pieces = len(after.preprocessing.pieces) if after.preprocessing else 0
    previous = len(before.final_selection_ids)
    kept = len(after.final_selection_ids)
    figures: dict[str, Any] = {
        "counts": {
            "pieces": pieces,
            "candidates": len(after.base_context_chunks),
            "kept": kept,
            "dropped": max(previous - kept, 0) if previous else 0,
        },
        "prompt_tokens": services.budget.count(after.prompt_ready),
    }
    retrieval = after.extras.get("retrieval")
    if retrieval and after.stage is Stage.RETRIEVAL:
        figures["retrieval"] = {"strategy": retrieval["strategy"], "rung": retrieval["rung"]}
    return figures


def _make_node(name: str) -> Callable[[SuperPrompt, Runtime[RunContext]], dict[str, Any]]:
    stage = STAGE_FOR_NODE[name]

    def node(state: SuperPrompt, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context if isinstance(runtime.context, RunContext) else RunContext()
        if name in ctx.skip:
            log.info("stage %s skipped by option", name)
            return {}
        services = ctx.services or default_services()
        emit({"event": "stage_start", "stage": stage.value, "node": name})
        started = time.perf_counter()
        try:
            if stage is not Stage.PREPROCESSED:
                check_stage_allowed(state, stage)
            after = STAGE_FNS[name](state, services, ctx)
        except Exception as exc:
            emit({"event": "stage_error", "stage": stage.value, "error": type(exc).__name__, "message": str(exc)})
            raise
        finish = stage_figures(state, after, services)
        finish.update(event="stage_finish", stage=stage.value, node=name, duration_ms=round((time.perf_counter() - started) * 1000, 2))
        emit(finish)
        log.info("stage %s done in %.0f ms: %s", name, finish["duration_ms"], finish["counts"])
        return changed_fields(state, after)

    node.__name__ = f"{name}_node"
    return node


def _transient(exc: BaseException) -> bool:
    """Worth one more node attempt: rate limits, server errors, timeouts, dropped connections."""
    return isinstance(exc, LLMCallError) and (exc.status is None or exc.status == 429 or exc.status >= 500)


def graph_builder() -> StateGraph:
    builder = StateGraph(SuperPrompt, context_schema=RunContext)
    retry = RetryPolicy(max_attempts=2, initial_interval=0.5, retry_on=_transient)
    for name, _ in NODES:
        builder.add_node(name, _make_node(name), retry_policy=retry)
    builder.add_edge(START, NODES[0][0])
    for (a, _), (b, _) in zip(NODES, NODES[1:]):
        builder.add_edge(a, b)
    builder.add_edge(NODES[-1][0], END)
    return builder


def build_graph(
    checkpointer: BaseCheckpointSaver | None = None, interrupt_after: list[str] | None = None
) -> CompiledStateGraph:
    return graph_builder().compile(checkpointer=checkpointer, interrupt_after=interrupt_after or None, name="ragstream")

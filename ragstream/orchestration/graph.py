"""The RAGstream graph: one node per registered stage over the SuperPrompt.

Each stage's node is a function of the stage's name (`a3` below is the node Studio shows as "a3") that
calls its stage module's `run` through `run_stage`, which validates the run's context (before any work),
checks the stage rules, and applies the typed output in one place (`apply_output`). Edges are the
stage order: a stage's edges go to the stages that may legally follow it in an auto run (`successors`),
to the `review` interrupt (after the stages `pause_after` names) and to END; which one is taken follows
from the state, so an auto run and a resumed run continue from where the SuperPrompt actually is.

A run starts from the input `{"prompt": "..."}` (what Studio's input form shows); a manual step
aims at one node with `Command(goto=...)` and ends right after it. A run that sends goes on from
the build to the `answer` and `critic` nodes (see `answer`). Every state channel takes only values
the product settled (`SettledValue`): a raw `update_state` of a field is refused.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Annotated, Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime, get_runtime
from pydantic import BaseModel, Field, JsonValue, create_model

from ragstream import stages
from ragstream.errors import EmptyPromptError, LLMNotConfiguredError
from ragstream.index.manifest import indexed_project
from ragstream.orchestration.answer import ANSWER, CRITIC, NO_LLM, after_critic, answer_node, critic_node
from ragstream.orchestration.apply import SettledValue, apply_output, to_channels
from ragstream.orchestration.identity import run_memory, served_user
from ragstream.orchestration.metadata import usage_of
from ragstream.orchestration.review import review_name, review_node, review_targets
from ragstream.orchestration.strict import DECIDE, check_decided, decide_node, strict_waiting
from ragstream.preprocessing import validate_prompt
from ragstream.services import Services, default_services
from ragstream.stages import Stage
from ragstream.stages.io import StageEnv, StageOutput
from ragstream.stages.options import RunOptions
from ragstream.stages.rules import check_stage_allowed, next_stage, successors
from ragstream.state import SuperPrompt
from ragstream.state.stage import ORDER
from ragstream.telemetry.events import collect_llm_calls, emit
from ragstream.tenancy.users import require_project

log = logging.getLogger("ragstream.graph")
NEEDS_PROJECT = frozenset({Stage.RETRIEVAL, Stage.RERANK})


class GraphInput(BaseModel):
    """What a run starts with. `prompt` is the raw prompt; the thread's own state is never the input,
    so a rejected prompt leaves every value of the thread as it was. Any JSON is accepted here: the
    product's own validation (before any stage) says what is wrong with it, as a typed error, where a
    schema error would leave a value no later read of the thread could load."""

    prompt: JsonValue = Field(None, description="The raw prompt (text). Null resumes a paused run.")


class PreprocessInput(SuperPrompt):
    """The PreProcessing node also sees the run's input prompt."""

    prompt: JsonValue = None


def preflight(
    sp: SuperPrompt, stage: Stage, ctx: RunOptions, services: Services, prompt: JsonValue, user: str | None = None
) -> None:
    """Everything that can be checked before a stage does any work (and before any LLM call).

    `user` is a served run's authenticated user: refused on a project they may not use, whether or
    not it exists."""
    if stage is not Stage.PREPROCESS:
        check_stage_allowed(sp, stage)
        check_decided(sp, stage)
    elif not ctx.prompt_admitted:  # a RunSession's run had its prompt checked here, once, before it began
        text = prompt if prompt is not None else sp.raw_prompt
        if prompt is None and not text:
            raise EmptyPromptError('no prompt: start the run with the input {"prompt": "<your prompt>"}')
        validate_prompt(text, services.settings, served=user is not None)
    project = ctx.project or sp.extras.project
    for name in (project, *ctx.projects):
        require_project(services.settings, user, name)
    if project or not ctx.manual or stage in NEEDS_PROJECT:
        indexed_project(services.settings, project)
    if ctx.send and services.offline:
        raise LLMNotConfiguredError(NO_LLM)


StageRun = Callable[[SuperPrompt, StageEnv], StageOutput[Any]]


def run_stage(stage: Stage, run: StageRun, state: SuperPrompt, runtime: Runtime[RunOptions]) -> dict[str, Any]:
    """A stage's node: the checks before any work, the stage's `run`, its output applied, its events."""
    ctx = RunOptions.coerce(runtime.context)
    services = ctx.services or default_services()
    prompt = getattr(state, "prompt", None)
    emit({"event": "stage_start", "stage": stage.node})
    started = time.perf_counter()
    try:
        preflight(state, stage, ctx, services, prompt, served_user())
        with collect_llm_calls() as calls:
            output = run(state, StageEnv(services, ctx, prompt, run_memory(runtime, services)))
        updates = apply_output(state, stage, output, usage_of(calls), thread_id())
    except Exception as exc:
        emit({"event": "stage_error", "stage": stage.node, "error": type(exc).__name__, "message": str(exc)})
        raise
    after = state.model_copy(update=updates)
    finish = stage_figures(after, services)
    finish.update(event="stage_finish", stage=stage.node, duration_ms=round((time.perf_counter() - started) * 1000, 2))
    emit(finish)
    log.info("stage %s done in %.0f ms: %s", stage.node, finish["duration_ms"], finish["counts"])
    written = to_channels(state, updates)
    if stage is Stage.PREPROCESS:
        written["prompt"] = None  # consumed: the thread's values hold it as raw_prompt now
    return written


# One node per stage, named as the stage (the name Studio shows and checkpoints record), in stage order.


def preprocess(state: PreprocessInput, runtime: Runtime[RunOptions]) -> dict[str, Any]:
    return run_stage(Stage.PREPROCESS, stages.preprocess.run, state, runtime)


def a2(state: SuperPrompt, runtime: Runtime[RunOptions]) -> dict[str, Any]:
    return run_stage(Stage.A2, stages.a2.run, state, runtime)


def retrieval(state: SuperPrompt, runtime: Runtime[RunOptions]) -> dict[str, Any]:
    return run_stage(Stage.RETRIEVAL, stages.retrieval.run, state, runtime)


def rerank(state: SuperPrompt, runtime: Runtime[RunOptions]) -> dict[str, Any]:
    return run_stage(Stage.RERANK, stages.rerank.run, state, runtime)


def a3(state: SuperPrompt, runtime: Runtime[RunOptions]) -> dict[str, Any]:
    return run_stage(Stage.A3, stages.a3.run, state, runtime)


def a4(state: SuperPrompt, runtime: Runtime[RunOptions]) -> dict[str, Any]:
    return run_stage(Stage.A4, stages.a4.run, state, runtime)


def a5(state: SuperPrompt, runtime: Runtime[RunOptions]) -> dict[str, Any]:
    return run_stage(Stage.A5, stages.a5.run, state, runtime)


def build(state: SuperPrompt, runtime: Runtime[RunOptions]) -> dict[str, Any]:
    return run_stage(Stage.BUILD, stages.build.run, state, runtime)


STAGE_NODES = (preprocess, a2, retrieval, rerank, a3, a4, a5, build)


def thread_id() -> str | None:
    """The checkpoint thread of the running graph: the run's trace id (None without a checkpointer)."""
    thread = get_config().get("configurable", {}).get("thread_id")
    return str(thread) if thread is not None else None


def stage_figures(after: SuperPrompt, services: Services) -> dict[str, Any]:
    """Counts, token estimate and retrieval mode for a stage_finish event."""
    figures: dict[str, Any] = {
        "counts": {
            "pieces": len(after.preprocessing.pieces) if after.preprocessing else 0,
            "candidates": len(after.base_context_chunks),
            "kept": len(after.final_selection_ids),
        },
        "prompt_tokens": services.budget.count(after.prompt_ready),
    }
    retrieval = after.extras.retrieval
    if retrieval is not None and after.history_of_stages[-1] is Stage.RETRIEVAL:
        figures["retrieval"] = {
            "strategy": retrieval.strategy,
            "rung": retrieval.rung,
            "confidence": retrieval.confidence,
            "attempts": len(retrieval.attempts),
        }
        if retrieval.plan is not None:
            plan = retrieval.plan
            figures["plan"] = {
                "intent": plan.intent,
                "confidence": plan.confidence,
                "retrieve": plan.retrieve,
                "reason": plan.reason,
            }
    return figures


def run_context() -> RunOptions:
    """This run's options; defaults for an `update_state` outside a run (no runtime then)."""
    runtime = get_runtime()
    return RunOptions.coerce(runtime.context) if runtime is not None else RunOptions()


def onward(state: SuperPrompt, ctx: RunOptions, legal: list[str] | tuple[str, ...]) -> str:
    """The next stage after the frontier that this run does not skip; once built, the answer if the run
    sends. A frontier that moved outside the drawn edges (a raw `update_state` as another node) ends."""
    target = next_stage(state.stage, set(ctx.skip))
    if target is not None:
        return target.node if target.node in legal else END
    return ANSWER if ctx.send and state.stage is Stage.BUILD else END


def _router(stage: Stage, after_decisions: bool = False):
    """The edges out of `stage` (or out of the strict-mode decisions that follow PreProcessing)."""
    legal = [s.node for s in successors(stage)]
    strict = stage is Stage.PREPROCESS and not after_decisions

    def route(state: SuperPrompt) -> str:
        ctx = run_context()
        if strict and strict_waiting(state):
            return DECIDE
        if ctx.manual:
            return END
        if stage.node in ctx.pauses:
            return review_name(stage)
        return onward(state, ctx, legal)

    route.__name__ = "after_decisions" if after_decisions else f"after_{stage.node}"
    targets = [*legal, *([DECIDE] if strict else []), review_name(stage), END]
    return route, [*targets, *([ANSWER] if stage is Stage.BUILD else [])]


def _after_review(stage: Stage):
    """The edges out of the review after `stage`: where the frontier it leaves goes on (`review_targets`)."""
    reachable = review_targets(stage)
    legal = [s.node for s in ORDER if s in reachable]

    def route(state: SuperPrompt) -> str:
        return onward(state, run_context(), legal)

    route.__name__ = f"after_{review_name(stage)}"
    return route, [*legal, END, *([ANSWER] if None in reachable else [])]


def _state_schema() -> type[SuperPrompt]:
    """SuperPrompt with every channel taking only values the product settled (see `SettledValue`)."""
    fields = {
        name: (Annotated[info.annotation, SettledValue(info.annotation)], info)
        for name, info in SuperPrompt.model_fields.items()
    }
    return create_model("GraphState", __base__=SuperPrompt, __module__=__name__, **fields)  # type: ignore[call-overload]


GraphState = _state_schema()


def graph_builder() -> StateGraph[Any, RunOptions, GraphInput, SuperPrompt]:
    builder = StateGraph(GraphState, context_schema=RunOptions, input_schema=GraphInput, output_schema=SuperPrompt)
    builder.add_node(preprocess, input_schema=PreprocessInput)
    for node in STAGE_NODES[1:]:
        builder.add_node(node, input_schema=SuperPrompt)
    for stage in ORDER[1:]:
        builder.add_conditional_edges(stage.node, *_router(stage))
    builder.add_node(DECIDE, decide_node)
    builder.add_conditional_edges(DECIDE, *_router(Stage.PREPROCESS, after_decisions=True))
    for stage in ORDER[1:]:
        builder.add_node(review_name(stage), review_node)
        builder.add_conditional_edges(review_name(stage), *_after_review(stage))
    builder.add_node(ANSWER, answer_node)
    builder.add_node(CRITIC, critic_node)
    builder.add_edge(ANSWER, CRITIC)
    builder.add_conditional_edges(CRITIC, after_critic, [ANSWER, END])
    builder.add_edge(START, Stage.PREPROCESS.node)
    return builder


# The compiled graph's type: its state, run options (the context), input and output.
RagstreamGraph = CompiledStateGraph[Any, RunOptions, GraphInput, SuperPrompt]


def build_graph(
    checkpointer: BaseCheckpointSaver | None = None, interrupt_after: list[str] | None = None
) -> RagstreamGraph:
    return graph_builder().compile(checkpointer=checkpointer, interrupt_after=interrupt_after or None, name="ragstream")


_GRAPHS: weakref.WeakKeyDictionary[BaseCheckpointSaver, RagstreamGraph] = weakref.WeakKeyDictionary()
_GRAPHS_LOCK = threading.Lock()


def graph_for(checkpointer: BaseCheckpointSaver) -> RagstreamGraph:
    """The compiled graph on this checkpointer, compiled once and shared by every controller using it
    (a session per request, as the GUI and servers make, would otherwise compile it each time)."""
    with _GRAPHS_LOCK:
        graph = _GRAPHS.get(checkpointer)
        if graph is None:
            graph = _GRAPHS[checkpointer] = build_graph(checkpointer)
        return graph

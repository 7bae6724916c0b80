"""The Retrieval stage: the plan, then the project's chunks (and the run's other tools') as planned.

Offline the plan is the planner's rules; with a model, the PLAN agent's (`run` chooses once). Retrieval
itself calls no model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragstream.errors import RetrievalError
from ragstream.stages.io import StageEnv, StageOutput
from ragstream.stages.spec import CANDIDATES, PROMPT, SELECTION, stage_spec
from ragstream.state import Chunk, RetrievalReport, SuperPrompt
from ragstream.strategies import Strategy

if TYPE_CHECKING:
    from ragstream.retrieval.chunks import ProjectTool
    from ragstream.retrieval.search import ProjectSearcher, Query
    from ragstream.retrieval.tools import WebSearchTool
    from ragstream.state import Plan

SPEC = stage_spec(
    "retrieval",
    "Retrieval",
    "preprocess",
    "retrieval needs query pieces",
    {PROMPT},
    {CANDIDATES, SELECTION},
    fields=("base_context_chunks",),
)
REPORT = RetrievalReport


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[RetrievalReport]:
    """The plan first (decided here, so it is valid exactly as long as what it retrieved), then retrieval as planned."""
    searcher = env.services.searcher(project_of(sp, env))
    plan = offline(sp, env) if env.services.offline else with_model(sp, env)
    return retrieved(sp, env, searcher, plan)


def offline(sp: SuperPrompt, env: StageEnv) -> Plan:
    """The plan by the planner's rules."""
    from ragstream.retrieval.planner import by_rules

    return by_rules(sp, env.services.settings, env.context.strategy)


def with_model(sp: SuperPrompt, env: StageEnv) -> Plan:
    """The plan by the PLAN agent (the rules' plan when its reply stays invalid)."""
    from ragstream.retrieval.planner import by_model

    return by_model(sp, env.services.settings, env.services.runner, env.context.strategy)


def other_tools(env: StageEnv, main: str, strategy: Strategy | None, rerun: bool) -> list[ProjectTool | WebSearchTool]:
    """The run's other tools: the extra projects (each must be indexed), then the web when enabled."""
    from ragstream.index.manifest import indexed_project
    from ragstream.retrieval.chunks import ProjectTool
    from ragstream.retrieval.tools import WebSearchTool

    services, ctx = env.services, env.context
    tools: list[ProjectTool | WebSearchTool] = []
    for name in dict.fromkeys(ctx.projects):
        if name != main:
            indexed_project(services.settings, name)
            tools.append(ProjectTool(services.searcher(name), strategy, rerun))
    web = services.settings.tools.web_search
    if ctx.web_search if ctx.web_search is not None else web.enabled:
        tools.append(WebSearchTool(web))
    return tools


def searched(sp: SuperPrompt, env: StageEnv) -> list[Query]:
    """The query pieces, then each item the ask enumerates, searched with `retrieval.items_weight`: "We care about
    three things: a dark mode ..., how many levels the sidebar shows, and our logo" searched as one query found the
    theme's introduction and none of the three options; each searched alone finds its own, and with a share of one
    weight among them, an item's answer still fell outside the excerpts (uvicorn's graceful-shutdown timeout)."""
    from ragstream.gate.ask_parts import asked_items
    from ragstream.retrieval.chunks import query_pieces
    from ragstream.retrieval.search import Query

    weight = env.services.settings.retrieval.items_weight
    items = asked_items(sp, env.services.settings) if weight else []
    return query_pieces(sp) + [Query(item, weight) for item in items]


def project_of(sp: SuperPrompt, env: StageEnv) -> str:
    project = env.context.project or sp.extras.project
    if not project:
        raise RetrievalError("no project selected: choose the project whose documents to retrieve from")
    return project


def retrieved(sp: SuperPrompt, env: StageEnv, searcher: ProjectSearcher, plan: Plan) -> StageOutput[RetrievalReport]:
    """Retrieval as `plan` says.

    A failed retrieval fails the stage, or, with `plan.on_retrieval_failure: continue`, leaves the run
    without excerpts and says why (the report, the run metadata, and an Open issue from A4).
    """
    from ragstream.rendering.ask import normalized_ask
    from ragstream.retrieval.chunks import query_pieces, retrieve
    from ragstream.retrieval.tools import ToolRun, fuse

    services, ctx = env.services, env.context
    updates = {"extras": sp.extras.model_copy(update={"project": searcher.paths.name})}
    if not plan.retrieve:
        report = RetrievalReport(
            project=searcher.paths.name,
            strategy="NONE",
            strategy_reason=plan.reason,
            rung="skipped_by_plan",
            pieces=len(query_pieces(sp)),
            plan=plan,
        )
        return StageOutput(updates={**updates, "base_context_chunks": []}, report=report, selection=[])
    history: list[Chunk] = []
    if ctx.history_profile == "relevant":
        history = env.memory.relevant_chunks(
            searcher.paths.name,
            normalized_ask(sp),
            searcher.embedder,
            3,
            services.settings.retrieval.fallback_min_score,
        )
    strategy = Strategy(plan.strategy) if plan.strategy else None
    rerun = plan.source != "user"  # the confidence loop may widen a strategy the plan chose, never one the user forced
    tools = other_tools(env, searcher.paths.name, strategy, rerun)
    try:
        chunks, report = retrieve(searched(sp, env), searcher, strategy, None, plan.candidates, rerun)
    except RetrievalError as exc:
        if services.settings.plan.on_retrieval_failure == "fail":
            raise
        report = RetrievalReport(
            project=searcher.paths.name,
            strategy=plan.strategy or "NONE",
            rung="failed",
            pieces=len(query_pieces(sp)),
            failure=str(exc),
        )
        chunks = []
    if tools:
        runs = [ToolRun(searcher.paths.name, chunks)] + [
            tool.search(searched(sp, env), plan.candidates) for tool in tools
        ]
        chunks = fuse(runs, services.settings.retrieval.rrf_k, plan.candidates)
        report = report.model_copy(
            update={
                "tools": {run.name: len(run.chunks) for run in runs},
                "failures": {**report.failures, **{f"tool {run.name}": run.failure for run in runs if run.failure}},
            }
        )
    chunks += history
    report = report.model_copy(update={"history_chunks": len(history)})
    return StageOutput(
        updates={**updates, "base_context_chunks": chunks},
        report=report.model_copy(update={"plan": plan}),
        selection=[c.id for c in chunks],
    )

"""The Retrieval stage: the plan, then the project's chunks (and the run's other tools') as planned."""

from __future__ import annotations

from ragstream.errors import RetrievalError
from ragstream.index.manifest import indexed_project
from ragstream.rendering.ask import normalized_ask
from ragstream.retrieval.chunks import ProjectTool, query_pieces, retrieve
from ragstream.retrieval.planner import decide
from ragstream.retrieval.tools import ToolRun, WebSearchTool, fuse
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.state import Chunk, RetrievalReport, SuperPrompt
from ragstream.strategies import Strategy


def other_tools(env: StageEnv, main: str, strategy: Strategy | None, rerun: bool) -> list[ProjectTool | WebSearchTool]:
    """The run's other tools: the extra projects (each must be indexed), then the web when enabled."""
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


def project_of(sp: SuperPrompt, env: StageEnv) -> str:
    project = env.context.project or sp.extras.project
    if not project:
        raise RetrievalError("no project selected: choose the project whose documents to retrieve from")
    return project


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[RetrievalReport]:
    """The plan first (decided here, so it is valid exactly as long as what it retrieved), then retrieval as planned.

    A failed retrieval fails the stage, or, with `plan.on_retrieval_failure: continue`, leaves the run
    without excerpts and says why (the report, the run metadata, and an Open issue from A4).
    """
    services, ctx = env.services, env.context
    searcher = services.searcher(project_of(sp, env))
    plan = decide(sp, services.settings, services.runner, services.offline, ctx.strategy)
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
        chunks, report = retrieve(query_pieces(sp), searcher, strategy, None, plan.candidates, rerun)
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
            tool.search(query_pieces(sp), plan.candidates) for tool in tools
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

"""The Retrieval and ReRanker stages (controller spec §5.3-5.4): pure functions over the index."""

from __future__ import annotations

from ragstream.agents.planner import decide
from ragstream.errors import RetrievalError
from ragstream.ingestion.manifest import indexed_project
from ragstream.prompt_view import normalized_ask
from ragstream.retrieval.controller import Query, RetrievalController
from ragstream.retrieval.reranker import Reranker
from ragstream.retrieval.strategy import Strategy
from ragstream.retrieval.tools import ToolRun, WebSearchTool, fuse
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.state import Chunk, RerankReport, RetrievalAttempt, RetrievalReport, Stage, SuperPrompt


def query_pieces(sp: SuperPrompt) -> list[Query]:
    pieces = sp.preprocessing.pieces if sp.preprocessing else []
    return [Query(p.text_piece, p.weight) for p in pieces if p.kept_for_retrieval]


def retrieve(
    pieces: list[Query],
    controller: RetrievalController,
    strategy: Strategy | None = None,
    history: list[Chunk] | None = None,
    limit: int | None = None,
    rerun: bool | None = None,
) -> tuple[list[Chunk], RetrievalReport]:
    """Documents first, then (when the history profile asks for it) relevant past turns."""
    if not pieces:
        raise RetrievalError("the prompt has no content kept for retrieval (only META or unknown sections)")
    result = controller.retrieve(pieces, strategy, rerun=rerun, limit=limit)
    snapshot = controller.snapshot()
    chunks: list[Chunk] = []
    for item in result.results:
        chunk = snapshot.chunk(item.chunk_id)
        scores = {**item.scores, "fused": item.score}
        if item.chunk_id in result.similarity:
            scores["similarity"] = result.similarity[item.chunk_id]
        chunks.append(chunk.model_copy(update={"scores": scores}))
    chunks += history or []
    report = RetrievalReport(
        project=controller.paths.name,
        strategy=result.strategy.value,
        strategy_reason=result.strategy_reason,
        rung=result.rung,
        generation=result.generation,
        pieces=len(pieces),
        timings_ms={k: round(v, 2) for k, v in result.timings_ms.items()},
        counts=result.counts,
        failures=result.failures,
        history_chunks=len(history or []),
        confidence=result.confidence.score,
        confidence_evidence=result.confidence.evidence,
        attempts=[RetrievalAttempt(strategy=a.strategy, confidence=a.confidence) for a in result.attempts],
    )
    return chunks, report


def rerank(
    ask: str, chunks: list[Chunk], reranker: Reranker, controller: RetrievalController
) -> tuple[list[Chunk], RerankReport]:
    """The first `top_n` chunks reordered (and scored) by the reranker; the rest keep their order behind them."""
    head, tail = chunks[: reranker.top_n], chunks[reranker.top_n :]
    ranked = reranker.rerank(ask, head, controller)
    by_id = {c.id: c for c in head}
    key = f"rerank_{reranker.name}"
    rescored = [by_id[cid].model_copy(update={"scores": {**by_id[cid].scores, key: score}}) for cid, score in ranked]
    return rescored + tail, RerankReport(kind=reranker.name, reranked=len(ranked), top_n=reranker.top_n)


class ProjectTool:
    """Another project's index as a tool: its chunks carry the project's name (the fence shows it)."""

    def __init__(self, controller: RetrievalController, strategy: Strategy | None, rerun: bool) -> None:
        self.controller, self.strategy, self.rerun = controller, strategy, rerun
        self.name = controller.paths.name

    def search(self, pieces: list[Query], limit: int) -> ToolRun:
        try:
            chunks, _ = retrieve(pieces, self.controller, self.strategy, None, limit, self.rerun)
        except RetrievalError as exc:
            return ToolRun(self.name, failure=str(exc))
        tagged = [c.model_copy(update={"metadata": {**c.metadata, "project": self.name}}) for c in chunks]
        return ToolRun(self.name, tagged)


def other_tools(env: StageEnv, main: str, strategy: Strategy | None, rerun: bool) -> list[ProjectTool | WebSearchTool]:
    """The run's other tools: the extra projects (each must be indexed), then the web when enabled."""
    services, ctx = env.services, env.context
    tools: list[ProjectTool | WebSearchTool] = []
    for name in dict.fromkeys(ctx.projects):
        if name != main:
            indexed_project(services.settings, name)
            tools.append(ProjectTool(services.retrieval(name), strategy, rerun))
    web = services.settings.tools.web_search
    if ctx.web_search if ctx.web_search is not None else web.enabled:
        tools.append(WebSearchTool(web))
    return tools


def _project(sp: SuperPrompt, env: StageEnv) -> str:
    project = env.context.project or sp.extras.project
    if not project:
        raise RetrievalError("no project selected: choose the project whose documents to retrieve from")
    return project


def retrieval_stage(sp: SuperPrompt, env: StageEnv) -> StageOutput:
    """The plan first (decided here, so it is valid exactly as long as what it retrieved), then retrieval as planned.

    A failed retrieval fails the stage, or, with `plan.on_retrieval_failure: continue`, leaves the run
    without excerpts and says why (the report, the run metadata, and an Open issue from A4).
    """
    services, ctx = env.services, env.context
    controller = services.retrieval(_project(sp, env))
    plan = decide(sp, services.settings, services.runner, services.offline, ctx.strategy)
    updates = {"extras": sp.extras.model_copy(update={"project": controller.paths.name})}
    if not plan.retrieve:
        report = RetrievalReport(
            project=controller.paths.name,
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
            controller.paths.name,
            normalized_ask(sp),
            controller.embedder,
            3,
            services.settings.retrieval.fallback_min_score,
        )
    strategy = Strategy(plan.strategy) if plan.strategy else None
    rerun = plan.source != "user"  # the confidence loop may widen a strategy the plan chose, never one the user forced
    tools = other_tools(env, controller.paths.name, strategy, rerun)
    try:
        chunks, report = retrieve(query_pieces(sp), controller, strategy, None, plan.candidates, rerun)
    except RetrievalError as exc:
        if services.settings.plan.on_retrieval_failure == "fail":
            raise
        report = RetrievalReport(
            project=controller.paths.name,
            strategy=plan.strategy or "NONE",
            rung="failed",
            pieces=len(query_pieces(sp)),
            failure=str(exc),
        )
        chunks = []
    if tools:
        runs = [ToolRun(controller.paths.name, chunks)] + [
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


def rerank_stage(sp: SuperPrompt, env: StageEnv) -> StageOutput:
    by_id = sp.chunk_by_id()
    view = [by_id[cid] for cid in sp.selection_before(Stage.RERANK) if cid in by_id]
    controller = env.services.retrieval(_project(sp, env))
    ranked, report = rerank(normalized_ask(sp), view, env.services.reranker, controller)
    rescored = {c.id: c for c in ranked}
    return StageOutput(
        updates={"base_context_chunks": [rescored.get(c.id, c) for c in sp.base_context_chunks]},
        report=report,
        selection=[c.id for c in ranked],
    )

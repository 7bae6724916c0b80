"""Retrieved and reranked chunks with their reports (controller spec §5.3-5.4): pure functions over the index."""

from __future__ import annotations

from ragstream.errors import RetrievalError
from ragstream.retrieval.reranker import Reranker
from ragstream.retrieval.search import ProjectSearcher, Query
from ragstream.retrieval.tools import ToolRun
from ragstream.state import Chunk, RerankReport, RetrievalAttempt, RetrievalReport, SuperPrompt
from ragstream.strategies import Strategy


def query_pieces(sp: SuperPrompt) -> list[Query]:
    pieces = sp.preprocessing.pieces if sp.preprocessing else []
    return [Query(p.text_piece, p.weight) for p in pieces if p.kept_for_retrieval]


def retrieve(
    pieces: list[Query],
    searcher: ProjectSearcher,
    strategy: Strategy | None = None,
    history: list[Chunk] | None = None,
    limit: int | None = None,
    rerun: bool | None = None,
) -> tuple[list[Chunk], RetrievalReport]:
    """Documents first, then (when the history profile asks for it) relevant past turns."""
    if not pieces:
        raise RetrievalError("the prompt has no content kept for retrieval (only META or unknown sections)")
    result = searcher.retrieve(pieces, strategy, rerun=rerun, limit=limit)
    snapshot = searcher.snapshot()
    chunks: list[Chunk] = []
    for item in result.results:
        chunk = snapshot.chunk(item.chunk_id)
        scores = {**item.scores, "fused": item.score}
        if item.chunk_id in result.similarity:
            scores["similarity"] = result.similarity[item.chunk_id]
        chunks.append(chunk.model_copy(update={"scores": scores}))
    chunks += history or []
    report = RetrievalReport(
        project=searcher.paths.name,
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
        attempts=[
            RetrievalAttempt(strategy=a.strategy, confidence=a.confidence, compared=a.compared) for a in result.attempts
        ],
    )
    return chunks, report


def rerank(
    ask: str, chunks: list[Chunk], reranker: Reranker, searcher: ProjectSearcher
) -> tuple[list[Chunk], RerankReport]:
    """The first `top_n` chunks reordered (and scored) by the reranker; the rest keep their order behind them."""
    head, tail = chunks[: reranker.top_n], chunks[reranker.top_n :]
    ranked = reranker.rerank(ask, head, searcher)
    by_id = {c.id: c for c in head}
    key = f"rerank_{reranker.name}"
    rescored = [by_id[cid].model_copy(update={"scores": {**by_id[cid].scores, key: score}}) for cid, score in ranked]
    return rescored + tail, RerankReport(kind=reranker.name, reranked=len(ranked), top_n=reranker.top_n)


class ProjectTool:
    """Another project's index as a tool: its chunks carry the project's name (the fence shows it)."""

    def __init__(self, searcher: ProjectSearcher, strategy: Strategy | None, rerun: bool) -> None:
        self.searcher, self.strategy, self.rerun = searcher, strategy, rerun
        self.name = searcher.paths.name

    def search(self, pieces: list[Query], limit: int) -> ToolRun:
        try:
            chunks, _ = retrieve(pieces, self.searcher, self.strategy, None, limit, self.rerun)
        except RetrievalError as exc:
            return ToolRun(self.name, failure=str(exc))
        tagged = [c.model_copy(update={"metadata": {**c.metadata, "project": self.name}}) for c in chunks]
        return ToolRun(self.name, tagged)

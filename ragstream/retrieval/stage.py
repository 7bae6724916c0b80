"""The Retrieval and ReRanker stages: SuperPrompt in, SuperPrompt out (controller spec §5.3-5.4)."""

from __future__ import annotations

from ragstream.errors import RetrievalError
from ragstream.prompt_view import normalized_ask, render_prompt
from ragstream.retrieval.controller import Query, RetrievalController
from ragstream.retrieval.reranker import Reranker
from ragstream.retrieval.strategy import Strategy
from ragstream.state import Chunk, Stage, SuperPrompt, advance


def query_pieces(sp: SuperPrompt) -> list[Query]:
    pieces = sp.preprocessing.pieces if sp.preprocessing else []
    return [Query(p.text_piece, p.weight) for p in pieces if p.kept_for_retrieval]


def _finish(sp: SuperPrompt, stage: Stage, update: dict) -> SuperPrompt:
    updated = sp.model_copy(update={**update, **advance(sp, stage)})
    return updated.model_copy(update={"prompt_ready": render_prompt(updated)})


def run_retrieval(
    sp: SuperPrompt, controller: RetrievalController, strategy: Strategy | None = None, history: list[Chunk] | None = None
) -> SuperPrompt:
    """Documents first, then (when the history profile asks for it) relevant past turns."""
    pieces = query_pieces(sp)
    if not pieces:
        raise RetrievalError("the prompt has no content kept for retrieval (only META or unknown sections)")
    result = controller.retrieve(pieces, strategy)
    snapshot = controller.snapshot()
    chunks: list[Chunk] = []
    for item in result.results:
        chunk = snapshot.chunk(item.chunk_id)
        scores = {**item.scores, "fused": item.score}
        if item.chunk_id in result.similarity:
            scores["similarity"] = result.similarity[item.chunk_id]
        chunks.append(chunk.model_copy(update={"scores": scores}))
    chunks += history or []
    ids = [c.id for c in chunks]
    extras = {
        **sp.extras,
        "retrieval": {
            "project": controller.paths.name,
            "strategy": result.strategy.value,
            "rung": result.rung,
            "generation": result.generation,
            "pieces": len(pieces),
            "timings_ms": {k: round(v, 2) for k, v in result.timings_ms.items()},
            "counts": result.counts,
            "failures": result.failures,
            "history_chunks": len(history or []),
        },
    }
    views = {**sp.views_by_stage, Stage.RETRIEVAL.value: ids}
    return _finish(
        sp, Stage.RETRIEVAL,
        {"base_context_chunks": chunks, "views_by_stage": views, "final_selection_ids": ids, "extras": extras},
    )


def run_reranker(sp: SuperPrompt, reranker: Reranker, controller: RetrievalController) -> SuperPrompt:
    by_id = sp.chunk_by_id()
    view = [cid for cid in sp.views_by_stage.get(Stage.RETRIEVAL.value, []) if cid in by_id]
    head, tail = view[: reranker.top_n], view[reranker.top_n :]
    ranked = reranker.rerank(normalized_ask(sp), [by_id[cid] for cid in head], controller)
    key = f"rerank_{reranker.name}"
    rescored = dict(by_id)
    for cid, score in ranked:
        rescored[cid] = by_id[cid].model_copy(update={"scores": {**by_id[cid].scores, key: score}})
    ids = [cid for cid, _ in ranked] + tail
    extras = {**sp.extras, "reranker": {"kind": reranker.name, "reranked": len(ranked), "top_n": reranker.top_n}}
    return _finish(
        sp, Stage.RERANKED,
        {
            "base_context_chunks": [rescored[c.id] for c in sp.base_context_chunks],
            "views_by_stage": {**sp.views_by_stage, Stage.RERANKED.value: ids},
            "final_selection_ids": ids,
            "extras": extras,
        },
    )

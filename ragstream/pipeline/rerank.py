"""The ReRanker stage: the retrieved selection reordered (and scored) by the configured reranker."""

from __future__ import annotations

from ragstream.pipeline.retrieval import project_of
from ragstream.rendering.ask import normalized_ask
from ragstream.retrieval.chunks import rerank
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.state import RerankReport, Stage, SuperPrompt


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[RerankReport]:
    by_id = sp.chunk_by_id()
    view = [by_id[cid] for cid in sp.selection_before(Stage.RERANK) if cid in by_id]
    searcher = env.services.searcher(project_of(sp, env))
    ranked, report = rerank(normalized_ask(sp), view, env.services.reranker, searcher)
    rescored = {c.id: c for c in ranked}
    return StageOutput(
        updates={"base_context_chunks": [rescored.get(c.id, c) for c in sp.base_context_chunks]},
        report=report,
        selection=[c.id for c in ranked],
    )

"""The ReRanker stage: the retrieved selection reordered (and scored) by the configured reranker.

One path: the reranker that runs (embedding weights by default, a cross-encoder, the LLM's agent, or
none) is the configured one (`services.reranker`), whether or not a model is configured.
"""

from __future__ import annotations

from ragstream.stages.io import StageEnv, StageOutput
from ragstream.stages.retrieval import project_of
from ragstream.stages.spec import CANDIDATES, PROMPT, SELECTION, stage_spec
from ragstream.state import RerankReport, Stage, SuperPrompt

SPEC = stage_spec(
    "rerank",
    "ReRanker",
    "retrieval",
    "the ReRanker needs retrieved chunks",
    {PROMPT, CANDIDATES},
    {SELECTION},
    skippable=True,
    method="run_reranker",
)
REPORT = RerankReport


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[RerankReport]:
    from ragstream.rendering.ask import normalized_ask
    from ragstream.retrieval.chunks import rerank

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

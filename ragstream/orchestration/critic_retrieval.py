"""Critic-triggered retrieval: what the critic says the excerpts lack becomes a retrieval query.

When the critic rejects an answer and names missing information (`missing`), and a regeneration
will follow, the project is searched with it (the same searcher, confidence and re-run as the
Retrieval stage). Chunks the prompt already shows are left out; the new ones go through A3 (the
offline evidence, then the model's gate when one is configured) and those kept are hydrated into
whole excerpts (rendering/excerpts.py) within what the send budget leaves. The record goes on the
rejected attempt; the answer node puts its excerpts into the regeneration's request.
"""

from __future__ import annotations

import numpy as np

from ragstream.errors import RagstreamError
from ragstream.gate.evidence import weigh_all
from ragstream.gate.llm_gate import gate
from ragstream.rendering.excerpts import Sources, shown_excerpts, whole_excerpts
from ragstream.rendering.styles import fence
from ragstream.retrieval.chunks import retrieve
from ragstream.retrieval.search import Query
from ragstream.services import Services
from ragstream.state import CriticRetrieval, SuperPrompt
from ragstream.tenancy.projects import project_paths


def retrieve_missing(state: SuperPrompt, services: Services, project: str, missing: str) -> CriticRetrieval:
    """The retrieval for `missing`, recorded; a failure is recorded too (the regeneration still runs)."""
    record = CriticRetrieval(query=missing)
    try:
        searcher = services.searcher(project)
        found, report = retrieve([Query(missing)], searcher)
    except RagstreamError as exc:
        return record.model_copy(update={"failure": f"{type(exc).__name__}: {exc}"})
    shown = {cid for chunk in shown_excerpts(state) for cid in chunk.id.split()}
    fresh = [c for c in found if c.id not in shown][: services.settings.send.critic_new_chunks]
    record = record.model_copy(
        update={"strategy": report.strategy, "confidence": report.confidence, "candidates": [c.id for c in fresh]}
    )
    if not fresh:
        return record
    stored = searcher.stored_vectors([c.id for c in fresh])
    unstored = [c for c in fresh if c.id not in stored]
    stored.update(zip((c.id for c in unstored), services.embedder.embed([c.text for c in unstored]), strict=False))
    vectors = np.asarray([stored[c.id] for c in fresh], dtype=np.float32).reshape(len(fresh), -1)
    weighed = weigh_all([missing], fresh, vectors, services.embedder.embed([missing]), services.settings.gate)
    kept, a3 = weighed.kept, weighed.report
    if not services.offline:
        kept, a3 = gate(missing, fresh, services.runner, weighed, services.settings.gate)
    chosen = [c for c in fresh if c.id in kept]
    budget = services.budget
    room = budget.ceiling("send") - budget.count(state.prompt_ready)
    root = project_paths(services.settings, project).source_dir()
    sources = Sources(root, services.settings, searcher.snapshot().document_text)
    excerpts, _, _ = whole_excerpts(chosen, sources, budget, fence, 0, services.settings.excerpts, ceiling=max(room, 1))
    return record.model_copy(
        update={
            "decisions": {cid: f"{d.decision}: {d.reason}" for cid, d in a3.decisions.items()},
            "kept": [c.id for c in chosen],
            "excerpts_md": "\n\n".join(fence(c) for c in excerpts),
        }
    )

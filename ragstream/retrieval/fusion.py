"""Weighted reciprocal-rank fusion of ranked lists, keeping each retriever's own score."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RankedList:
    """One retriever's results for one query piece: (chunk id, raw score), best first."""

    retriever: str
    hits: list[tuple[str, float]]
    weight: float = 1.0


@dataclass
class RetrievedChunk:
    chunk_id: str
    score: float
    scores: dict[str, float] = field(default_factory=dict)
    best_rank: dict[str, int] = field(default_factory=dict)


def rrf_fuse(lists: list[RankedList], k: float) -> list[RetrievedChunk]:
    """Sum of weight / (k + rank) over lists; ties broken by chunk id for determinism.

    Per retriever, the best raw score and best rank across query pieces are kept for display.
    """
    merged: dict[str, RetrievedChunk] = {}
    for ranked in lists:
        for rank, (cid, raw) in enumerate(ranked.hits, start=1):
            item = merged.setdefault(cid, RetrievedChunk(chunk_id=cid, score=0.0))
            item.score += ranked.weight / (k + rank)
            name = ranked.retriever
            item.scores[name] = max(item.scores.get(name, raw), raw)
            item.best_rank[name] = min(item.best_rank.get(name, rank), rank)
    return sorted(merged.values(), key=lambda r: (-r.score, r.chunk_id))

"""ReRankers: reorder the top candidates of a retrieval result, returning ids with scores.

- `embedding` (offline default): a calibrated score fusion. Rank fusion throws away how far apart
  scores are; this reranker puts the dense cosine similarity (MiniLM) and the BM25 score of each
  candidate on one scale (min-max over the candidates) and mixes them with a weight from config.
- `cross_encoder`: a sentence-transformers CrossEncoder, by model name or path, for users who have one.
- `llm`: asks an agent (config `RR/v1`) to grade each candidate's relevance.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ragstream.errors import ConfigError
from ragstream.retrieval.kinds import Kind, chunk_kind
from ragstream.retrieval.search import ProjectSearcher
from ragstream.settings import RerankSignal, Settings
from ragstream.state import Chunk


class Reranker(Protocol):
    name: str
    top_n: int

    def rerank(self, query: str, chunks: list[Chunk], searcher: ProjectSearcher) -> list[tuple[str, float]]:
        """Chunk ids with scores, best first."""
        ...


class NoReranker:
    """Keeps the fused order (for comparison, or when reranking is switched off)."""

    name = "none"
    top_n = 30

    def rerank(self, query: str, chunks: list[Chunk], searcher: ProjectSearcher) -> list[tuple[str, float]]:
        return [(c.id, float(-i)) for i, c in enumerate(chunks)]


def _minmax(values: np.ndarray) -> np.ndarray:
    span = float(values.max() - values.min()) if len(values) else 0.0
    return (values - values.min()) / span if span > 0 else np.zeros_like(values)


class EmbeddingReranker:
    """Convex fusion of three exact scores, each min-max normalized over the candidates: the chunk's
    cosine to the query, its BM25, and the BM25 of its whole file (document-level evidence).
    The weights depend on the chunk's kind (retrieval/kinds.py): prose uses `reranker.weights`, chosen
    by cross-validation on SciFact train (bench/fusion_cv.py); `reranker.kind_weights` overrides them
    per kind (code: its file's BM25 says little, since one long module repeats every term)."""

    name = "embedding"

    def __init__(
        self,
        weights: dict[RerankSignal, float],
        top_n: int,
        kind_weights: dict[Kind, dict[RerankSignal, float]] | None = None,
    ) -> None:
        self.weights = weights
        self.kind_weights = kind_weights or {}
        self.top_n = top_n

    def rerank(self, query: str, chunks: list[Chunk], searcher: ProjectSearcher) -> list[tuple[str, float]]:
        if not chunks:
            return []
        ids = [c.id for c in chunks]
        snapshot = searcher.snapshot()
        qvec = searcher.embedder.embed([query])[0]
        stored = searcher.stored_vectors(ids)
        foreign = [c for c in chunks if c.id not in stored]  # another project's, the web's, or unusable: embedded here
        stored.update(
            zip(
                (c.id for c in foreign),
                searcher.embedder.embed([c.text for c in foreign]) if foreign else [],
                strict=False,
            )
        )
        signals: dict[RerankSignal, np.ndarray] = {
            "dense": np.asarray([float(np.dot(stored[cid], qvec)) if cid in stored else 0.0 for cid in ids]),
            "chunk_bm25": snapshot.chunk_bm25(query, ids),
            "file_bm25": snapshot.file_bm25_of(query, ids),
        }
        normalized = {name: _minmax(values) for name, values in signals.items()}
        weights = [self.kind_weights.get(chunk_kind(c), self.weights) for c in chunks]
        mixed = np.asarray(
            [sum(w.get(name, 0.0) * normalized[name][i] for name in normalized) for i, w in enumerate(weights)]
        )
        order = sorted(range(len(ids)), key=lambda i: (-mixed[i], ids[i]))
        return [(ids[i], float(mixed[i])) for i in order]


class CrossEncoderReranker:
    name = "cross_encoder"

    def __init__(self, model: str, top_n: int) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise ConfigError("the cross_encoder reranker needs torch: pip install 'ragstream[torch]'") from exc
        try:
            self.model = CrossEncoder(model, device="cpu", local_files_only=True)
        except Exception as exc:  # any load failure means the model is not usable here
            raise ConfigError(f"cannot load cross-encoder '{model}': {exc}") from exc
        self.top_n = top_n

    def rerank(self, query: str, chunks: list[Chunk], searcher: ProjectSearcher) -> list[tuple[str, float]]:
        if not chunks:
            return []
        scores = self.model.predict([(query, c.text) for c in chunks], show_progress_bar=False)
        order = sorted(range(len(chunks)), key=lambda i: (-float(scores[i]), chunks[i].id))
        return [(chunks[i].id, float(scores[i])) for i in order]


class LLMReranker:
    """Grades each candidate with the `RR` agent (relevance high/medium/low), ties kept in input order.

    The candidates are graded concurrently (the runner's bounded pool); results keep input order.
    """

    name = "llm"
    _GRADE = {"high": 2.0, "medium": 1.0, "low": 0.0}

    def __init__(self, runner: Any, top_n: int, version: str = "v1") -> None:
        self.runner = runner
        self.top_n = top_n
        self.version = version

    def rerank(self, query: str, chunks: list[Chunk], searcher: ProjectSearcher) -> list[tuple[str, float]]:
        calls = self.runner.run_many("RR", [{"query": query, "passage": c.text} for c in chunks], self.version)
        graded = [
            (c.id, self._GRADE[call.output["relevance"]] - i * 1e-6)
            for i, (c, call) in enumerate(zip(chunks, calls, strict=False))
        ]
        return sorted(graded, key=lambda g: -g[1])


def reranker_from_settings(settings: Settings, runner: Any = None) -> Reranker:
    cfg = settings.reranker
    if cfg.kind == "cross_encoder":
        if not cfg.model:
            raise ConfigError("reranker.model must name a CrossEncoder model (name or path) for kind 'cross_encoder'")
        return CrossEncoderReranker(cfg.model, cfg.top_n)
    if cfg.kind == "llm":
        if runner is None:
            raise ConfigError("the llm reranker needs an agent runner")
        return LLMReranker(runner, cfg.top_n)
    if cfg.kind == "none":
        return NoReranker()
    return EmbeddingReranker(cfg.weights, cfg.top_n, cfg.kind_weights)

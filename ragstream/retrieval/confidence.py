"""How far to trust a retrieval's result set, from evidence retrieval already has.

Six signals, each in [0, 1] or close to it, describe the result set against the two probes every
retrieval can run (the dense list and the BM25 list of the query pieces):

- `dense_top`: the best cosine between a query piece and one of the first results;
- `dense_margin`: how far that best cosine stands above the dense probe's median (a query that is
  equally close to everything has found nothing in particular);
- `bm25_margin`: how far the BM25 probe's best score stands above its second, over the best;
- `bm25_share`: the first result's BM25 over the corpus' best BM25 (does the result lead where the
  words lead?);
- `agreement`: the share of the first results that both probes rank near their top;
- `coverage`: the share of the ask's content terms (stemmed, no stopwords) that the first results hold.

A logistic model over them (weights in `retrieval.confidence`, fitted on labelled queries by
bench/confidence_calibration.py) turns them into the probability that a relevant chunk is among the
first `top` results. The score is a probability so that one threshold means the same on every corpus.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import get_args

import numpy as np

from ragstream.code.symbols import index_text
from ragstream.index.snapshot import Snapshot, bm25_tokens
from ragstream.settings import ConfidenceSettings, ConfidenceSignal

SIGNALS: tuple[ConfidenceSignal, ...] = get_args(ConfidenceSignal)


@dataclass(frozen=True)
class Probes:
    """The query's dense and BM25 lists over the whole generation (best first), one per query piece."""

    dense: list[list[tuple[str, float]]] = field(default_factory=list)
    bm25: list[list[tuple[str, float]]] = field(default_factory=list)
    vectors: np.ndarray | None = None
    terms: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Confidence:
    """A result set's calibrated confidence and the evidence it was computed from."""

    score: float
    evidence: dict[str, float]

    def is_low(self, settings: ConfidenceSettings) -> bool:
        return self.score < settings.low


def evidence(result_ids: list[str], probes: Probes, snap: Snapshot, settings: ConfidenceSettings) -> dict[str, float]:
    """The six signals for the first `settings.top` results (all 0 for an empty result)."""
    head = result_ids[: settings.top]
    if not head:
        return dict.fromkeys(SIGNALS, 0.0)
    dense_top = 0.0
    stored = snap.vectors_of(head)
    if probes.vectors is not None and len(probes.vectors) and stored:
        matrix = np.stack([stored[cid] for cid in head if cid in stored])
        dense_top = float((matrix @ np.asarray(probes.vectors, dtype=np.float32).T).max())
    medians = [float(np.median([s for _, s in hits])) for hits in probes.dense if hits]
    dense_margin = max(dense_top - max(medians), 0.0) if medians else 0.0
    bm25_margin, bm25_best = 0.0, 0.0
    for hits in probes.bm25:
        if hits and hits[0][1] > 0:
            second = hits[1][1] if len(hits) > 1 else 0.0
            bm25_margin = max(bm25_margin, (hits[0][1] - second) / hits[0][1])
            bm25_best = max(bm25_best, hits[0][1])
    first_bm25 = max((dict(hits).get(head[0], 0.0) for hits in probes.bm25), default=0.0)
    near = settings.near
    dense_near = {cid for hits in probes.dense for cid, _ in hits[:near]}
    bm25_near = {cid for hits in probes.bm25 for cid, _ in hits[:near]}
    agreement = sum(cid in dense_near and cid in bm25_near for cid in head) / len(head)
    held = set()
    for cid in head[: settings.coverage_top]:
        if cid in snap.by_id:
            held.update(bm25_tokens([index_text(snap.chunk(cid))])[0])
    coverage = len(probes.terms & held) / len(probes.terms) if probes.terms else 0.0
    return {
        "dense_top": round(dense_top, 4),
        "dense_margin": round(dense_margin, 4),
        "bm25_margin": round(bm25_margin, 4),
        "bm25_share": round(first_bm25 / bm25_best, 4) if bm25_best > 0 else 0.0,
        "agreement": round(agreement, 4),
        "coverage": round(coverage, 4),
    }


def calibrated(signals: dict[str, float], settings: ConfidenceSettings) -> float:
    """The logistic model: P(a relevant chunk is among the first results | the signals)."""
    z = settings.bias + sum(settings.weights.get(name, 0.0) * signals.get(name, 0.0) for name in SIGNALS)
    return round(1.0 / (1.0 + math.exp(-z)), 4)


def assess(result_ids: list[str], probes: Probes, snap: Snapshot, settings: ConfidenceSettings) -> Confidence:
    """An empty result has no confidence at all: nothing found can never win a re-run."""
    signals = evidence(result_ids, probes, snap, settings)
    return Confidence(calibrated(signals, settings) if result_ids else 0.0, signals)


def content_terms(texts: list[str]) -> frozenset[str]:
    """The ask's content terms as BM25 sees them: stemmed words without stopwords."""
    return frozenset(term for tokens in bm25_tokens(texts) for term in tokens)

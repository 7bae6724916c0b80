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

A low score re-runs retrieval with other strategies, and the most `compared` result is kept: the same model
without the signals of `confidence.compare_without`. `bm25_share` is there because KEYWORD's first result is
the BM25 list's best by construction: its share is 1 for every query, so it says nothing about that result,
yet it added its whole weight to KEYWORD's score and KEYWORD won re-runs over a dense first result that
answered ("retry only when my function returns None" on tenacity's source: retry.py first by DENSE, in none
of KEYWORD's first 30). The dense margin stays: it measures how far the dense list's best stands out, which
varies with the query for every strategy.
"""

from __future__ import annotations

import math
from collections.abc import Collection
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
    compared: float = 0.0  # the score without `compare_without`'s signals: what re-runs are compared by

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


def calibrated(signals: dict[str, float], settings: ConfidenceSettings, leaving_out: Collection[str] = ()) -> float:
    """The logistic model: P(a relevant chunk is among the first results | the signals), with the signals
    `leaving_out` names read as 0."""
    z = settings.bias + sum(
        settings.weights.get(name, 0.0) * signals.get(name, 0.0) for name in SIGNALS if name not in leaving_out
    )
    return round(1.0 / (1.0 + math.exp(-z)), 4)


def comparable(signals: dict[str, float], settings: ConfidenceSettings) -> float:
    """What one strategy's result is compared with another's by (see the module's docstring)."""
    return calibrated(signals, settings, settings.compare_without)


def assess(result_ids: list[str], probes: Probes, snap: Snapshot, settings: ConfidenceSettings) -> Confidence:
    """An empty result has no confidence at all: nothing found can never win a re-run."""
    signals = evidence(result_ids, probes, snap, settings)
    if not result_ids:
        return Confidence(0.0, signals, 0.0)
    return Confidence(calibrated(signals, settings), signals, comparable(signals, settings))


def content_terms(texts: list[str]) -> frozenset[str]:
    """The ask's content terms as BM25 sees them: stemmed words without stopwords."""
    return frozenset(term for tokens in bm25_tokens(texts) for term in tokens)

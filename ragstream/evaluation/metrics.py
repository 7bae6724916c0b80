"""Rank metrics for one ranked list against a case's relevant passages, percentiles, and the paired test.

A ranked list of chunks is judged as a ranking of what the suite labels: a relevant passage given as a
whole file counts once, at the first chunk of that file; one given with lines counts at the first chunk
overlapping them. So hit@k, MRR@10 and nDCG@10 mean for a chunked index what BEIR means for documents.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragstream.evaluation.suite import Relevant

STAGE_METRICS = ("hit@1", "hit@5", "mrr@10", "ndcg@10")


@dataclass(frozen=True)
class Ranked:
    """A retrieved chunk as the metrics see it: its file and its lines (None when unknown)."""

    path: str
    lines: tuple[int, int] | None = None


def _matches(item: Ranked, rel: Relevant) -> bool:
    if item.path != rel.path:
        return False
    if rel.lines is None or item.lines is None:
        return True
    return item.lines[0] <= rel.lines[1] and rel.lines[0] <= item.lines[1]


def gains(ranking: Sequence[Ranked], relevant: Sequence[Relevant]) -> list[float]:
    """The gain at each rank: a relevant passage's grade at the first item matching it, 0 elsewhere (a
    document's later chunks do not count again)."""
    found: set[int] = set()
    out: list[float] = []
    for item in ranking:
        gain = 0.0
        for i, rel in enumerate(relevant):
            if i not in found and _matches(item, rel):
                found.add(i)
                gain = max(gain, float(rel.grade))
        out.append(gain)
    return out


def rank_metrics(ranking: Sequence[Ranked], relevant: Sequence[Relevant]) -> dict[str, float]:
    """hit@1, hit@5, MRR@10 and nDCG@10 (graded gains, ideal from the grades)."""
    g = gains(ranking[:10], relevant)
    first = next((i for i, v in enumerate(g, start=1) if v > 0), None)
    dcg = sum(v / math.log2(i + 1) for i, v in enumerate(g, start=1))
    ideal_gains = sorted((float(r.grade) for r in relevant), reverse=True)[:10]
    ideal = sum(v / math.log2(i + 1) for i, v in enumerate(ideal_gains, start=1))
    return {
        "hit@1": float(first == 1),
        "hit@5": float(first is not None and first <= 5),
        "mrr@10": 1.0 / first if first else 0.0,
        "ndcg@10": dcg / ideal if ideal else 0.0,
    }


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (linear interpolation); 0 for no values."""
    return float(np.percentile(values, q)) if len(values) else 0.0


def wilcoxon_signed_rank(differences: Sequence[float]) -> tuple[float, int]:
    """Two-sided exact p-value of the Wilcoxon signed-rank test on paired differences, and the pairs it used.

    Zero differences are dropped (Wilcoxon's way); tied magnitudes get their mid-rank. The null
    distribution of the positive rank sum is computed exactly over all 2^n sign assignments by dynamic
    programming on doubled ranks (integers even with mid-ranks), conditional on the observed ties, so it
    holds for the small per-case samples a suite gives, without scipy (not a dependency of the user install).
    """
    d = np.asarray([x for x in differences if x != 0 and math.isfinite(x)], dtype=float)
    n = len(d)
    if n == 0:
        return 1.0, 0
    magnitudes = np.abs(d)
    order = np.argsort(magnitudes, kind="stable")
    ranks = np.empty(n)
    sorted_mag = magnitudes[order]
    i = 0
    while i < n:
        j = i
        while j + 1 < n and sorted_mag[j + 1] == sorted_mag[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    doubled = np.rint(ranks * 2).astype(int)
    total = int(doubled.sum())
    dist = np.zeros(total + 1)
    dist[0] = 1.0
    for r in doubled:  # each rank is in the positive sum or not, with probability 1/2
        shifted = np.zeros_like(dist)
        shifted[r:] = dist[: total + 1 - r]
        dist = (dist + shifted) / 2
    observed = int(doubled[d > 0].sum())
    mean = total / 2
    extreme = abs(observed - mean)
    sums = np.arange(total + 1)
    p = float(dist[np.abs(sums - mean) >= extreme - 1e-9].sum())
    return min(1.0, p), n

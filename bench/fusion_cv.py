"""Cross-validated weights for the default reranker's fusion (dense, chunk BM25, file BM25).

For every judged query, the shipped HYBRID retrieval gives the candidates; the three signals are
computed once. Then, per fold of a 5-fold split of the queries, the weight triple with the best mean
nDCG@10 on the other four folds is chosen from a grid and scored on the held-out fold. Printed: the
folds (chosen weights, train and held-out nDCG@10), the mean held-out nDCG@10, and the shipped
weights' nDCG@10 on every query.

Run after bench/retrieval_eval.py has ingested the corpus:
    python bench/fusion_cv.py [--data ../shared/data/scifact] [--split train] [--work data/bench]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
from pathlib import Path

import numpy as np
from retrieval_eval import DEFAULT_DATA, doc_ranking, ndcg_at, read_jsonl, read_qrels

from ragstream.retrieval.factory import build_searcher
from ragstream.settings import load_settings
from ragstream.strategies import Strategy

SIGNALS = ("dense", "chunk_bm25", "file_bm25")
FOLDS = 5


def _minmax(values: np.ndarray) -> np.ndarray:
    span = float(values.max() - values.min()) if len(values) else 0.0
    return (values - values.min()) / span if span > 0 else np.zeros_like(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", default="train")
    parser.add_argument("--work", type=Path, default=Path("data/bench"))
    args = parser.parse_args()

    settings = load_settings(overrides={"data_dir": str(args.work)})
    searcher = build_searcher(settings, args.data.name)
    snapshot = searcher.snapshot()
    qrels = read_qrels(args.data / "qrels" / f"{args.split}.tsv")
    queries = [q for q in read_jsonl(args.data / "queries.jsonl") if q["_id"] in qrels]

    cases = []
    for query in queries:
        ids = searcher.retrieve([query["text"]], Strategy.HYBRID).ids
        qvec = searcher.embedder.embed([query["text"]])[0]
        stored = snapshot.vectors_of(ids)
        signals = np.stack(
            [
                _minmax(np.asarray([float(stored[cid] @ qvec) for cid in ids])),
                _minmax(snapshot.chunk_bm25(query["text"], ids)),
                _minmax(snapshot.file_bm25_of(query["text"], ids)),
            ]
        )
        cases.append((ids, signals, qrels[query["_id"]]))

    def score(weights: tuple[float, ...], index: list[int]) -> float:
        values = []
        for i in index:
            ids, signals, relevant = cases[i]
            mixed = np.asarray(weights) @ signals
            order = sorted(range(len(ids)), key=lambda k: (-mixed[k], ids[k]))
            values.append(ndcg_at(doc_ranking([ids[k] for k in order]), relevant, 10))
        return statistics.mean(values)

    steps = [round(x * 0.05, 2) for x in range(21)]
    grid = [w for w in itertools.product(steps, repeat=3) if abs(sum(w) - 1) < 1e-9]
    folds = [list(range(f, len(cases), FOLDS)) for f in range(FOLDS)]
    held = []
    for f, test in enumerate(folds):
        train = [i for i in range(len(cases)) if i not in set(test)]
        best = max(grid, key=lambda w: (score(w, train), -abs(w[0] - w[2])))
        held.append(score(best, test))
        print(
            f"fold {f + 1}: weights {dict(zip(SIGNALS, best, strict=False))}  train nDCG@10 {score(best, train):.4f}  "
            f"held-out nDCG@10 {held[-1]:.4f}  (n={len(test)})",
            flush=True,
        )
    print(f"cross-validated nDCG@10 (mean of held-out folds): {statistics.mean(held):.4f}")
    shipped = tuple(settings.reranker.weights.get(s, 0.0) for s in SIGNALS)
    print(
        f"shipped weights {dict(zip(SIGNALS, shipped, strict=False))}: "
        f"nDCG@10 {score(shipped, list(range(len(cases)))):.4f} on all {len(cases)} queries"
    )


if __name__ == "__main__":
    main()

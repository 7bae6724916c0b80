"""How the offline A3 gate decides on real retrieval candidates (BEIR SciFact by default).

For every judged query, the shipped retrieval (HYBRID + reranker, at the defaults) gives the
candidates A3 would see; the offline gate keeps or drops each. Printed per setting: the share of
relevant candidates kept (it must stay near 1: dropping evidence is worse than keeping noise), the
share of irrelevant candidates dropped, the candidates kept per query and the queries where nothing was
kept (every SciFact query has an answer, so "not covered" there is a miss). The shipped setting is
the last line; the grid around it is what it was chosen from. Then, for `gate.strong_evidence` (with a
model, the evidence at which the model's "irrelevant" is overruled) and values around it, the share of
candidates at or above it that are relevant, against the share among all kept candidates. The shipped
`gate.min_evidence` is first calibrated against the corpus, as the pipeline does (printed first).

Run after bench/retrieval_eval.py has ingested the corpus:
    python bench/gate_eval.py [--data ../shared/data/scifact] [--split train] [--work data/bench]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np
from retrieval_eval import DEFAULT_DATA, read_jsonl, read_qrels

from ragstream.gate.calibration import calibrated, corpus_null, off_topic_questions
from ragstream.gate.evidence import rarity_of, stemmed_terms, weigh, weigh_all
from ragstream.retrieval.chunks import rerank, retrieve
from ragstream.retrieval.factory import build_reranker, build_searcher
from ragstream.retrieval.search import Query
from ragstream.settings import load_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", default="train")
    parser.add_argument("--work", type=Path, default=Path("data/bench"))
    parser.add_argument("--limit", type=int, default=300)
    args = parser.parse_args()

    settings = load_settings(overrides={"data_dir": str(args.work)})
    searcher = build_searcher(settings, args.data.name)
    reranker = build_reranker(settings)
    qrels = read_qrels(args.data / "qrels" / f"{args.split}.tsv")
    queries = [q for q in read_jsonl(args.data / "queries.jsonl") if q["_id"] in qrels][: args.limit]

    cases = []
    for query in queries:
        chunks, _ = retrieve([Query(query["text"])], searcher)
        chunks, _ = rerank(query["text"], chunks, reranker, searcher)
        snapshot = searcher.snapshot()
        stored = snapshot.vectors_of([c.id for c in chunks])
        vectors = [stored[c.id] for c in chunks]
        relevant = {c.id for c in chunks if Path(c.source_path).stem in qrels[query["_id"]]}
        rarity = rarity_of(
            snapshot.document_frequency(stemmed_terms(query["text"], settings.gate)), len(snapshot.chunks)
        )
        cases.append(([query["text"]], chunks, vectors, searcher.embedder.embed([query["text"]]), relevant, rarity))

    # As the pipeline does: the threshold calibrated against this corpus (off-topic questions' evidence here).
    questions = off_topic_questions(settings.config_dir, settings.gate)
    calibration = calibrated(
        corpus_null(searcher.snapshot(), None, searcher.embedder.embed, questions, settings.gate), settings.gate
    )
    print(f"calibration: {calibration.describe()}")
    shipped = settings.gate.model_copy(update={"min_evidence": calibration.min_evidence})
    grid = [
        shipped.model_copy(update={"min_evidence": e, "min_similarity": m, "words_weight": w})
        for e in (0.45, 0.5, 0.55, 0.6)
        for m in (0.2, 0.25, 0.3)
        for w in (0.25, 0.5)
    ]
    for gate in [g for g in grid if g != shipped] + [shipped]:
        kept_relevant = total_relevant = dropped_other = total_other = nothing_kept = 0
        kept_per_query = []
        for ask, chunks, vectors, ask_vector, relevant, rarity in cases:
            kept, _ = weigh(ask, chunks, np.asarray(vectors, dtype=np.float32), ask_vector, gate, rarity)
            kept_per_query.append(len(kept))
            nothing_kept += not kept
            for chunk in chunks:
                if chunk.id in relevant:
                    total_relevant += 1
                    kept_relevant += chunk.id in kept
                else:
                    total_other += 1
                    dropped_other += chunk.id not in kept
        label = "shipped" if gate == shipped else ""
        print(
            f"min_evidence {gate.min_evidence:.2f} min_similarity {gate.min_similarity:.2f} words_weight "
            f"{gate.words_weight:.2f}  "
            f"relevant kept {kept_relevant / max(total_relevant, 1):.3f}  "
            f"irrelevant dropped {dropped_other / max(total_other, 1):.3f}  "
            f"kept/query {statistics.mean(kept_per_query):.1f}  nothing kept {nothing_kept}/{len(cases)}  {label}",
            flush=True,
        )
    judged = [
        (weigh_all(ask, chunks, np.asarray(vectors, dtype=np.float32), ask_vector, shipped, rarity), relevant)
        for ask, chunks, vectors, ask_vector, relevant, rarity in cases
    ]
    kept = [cid in relevant for found, relevant in judged for cid in found.kept]
    print(f"kept candidates: {len(kept)}, relevant {sum(kept) / max(len(kept), 1):.3f}")
    for strong in sorted({0.7, 0.8, 0.9, 1.0, shipped.strong_evidence}):
        above = [cid in relevant for found, relevant in judged for cid in found.kept if found.evidence[cid] >= strong]
        label = "shipped" if strong == shipped.strong_evidence else ""
        print(
            f"strong_evidence {strong:.2f}: {len(above)} kept at or above, "
            f"relevant {sum(above) / max(len(above), 1):.3f}  {label}"
        )


if __name__ == "__main__":
    main()

"""Retrieval quality and speed on a BEIR-format folder (default: SciFact train split).

Ingests the corpus through the real IngestionManager (one file per document: title, blank line,
text), runs every query through the real ProjectSearcher, and prints ingestion throughput and,
per configuration, nDCG@10, recall@100 and p50/p95 query latency, all at the shipped settings; the
last line is the shipped default (HYBRID + the default reranker). `--peers` measures LangChain's
EnsembleRetriever (BM25Retriever + Chroma over the same collection and MiniLM) in the same run.

`--backends onnx onnx-int8 ...` compares embedder variants side by side in one run: each ingests the
corpus into its own data root and prints chunks/s and nDCG@10 (dense SEMANTIC and the shipped default).

Run: python bench/retrieval_eval.py [--data ../shared/data/scifact] [--split train] [--work data/bench] [--peers]
     python bench/retrieval_eval.py --backends onnx onnx-int8 onnx-w8 onnx-w8-int8
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from ragstream.ingestion.manager import IngestionManager
from ragstream.retrieval.chunks import rerank
from ragstream.retrieval.factory import build_reranker, build_searcher
from ragstream.settings import Settings, load_settings
from ragstream.strategies import Strategy
from ragstream.text.chunk_ids import source_of


def _default_data() -> Path:
    """shared/data/scifact beside the repository, from a checkout or a worktree nested below it."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "shared" / "data" / "scifact").is_dir():
            return parent / "shared" / "data" / "scifact"
    return here.parents[2] / "shared" / "data" / "scifact"


DEFAULT_DATA = _default_data()


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_corpus(data: Path, target: Path, max_docs: int = 0, keep: set[str] | None = None) -> int:
    """One .txt file per document; unchanged files are left alone so re-ingest sees no change."""
    corpus_file = data / "corpus.jsonl.gz" if (data / "corpus.jsonl.gz").exists() else data / "corpus.jsonl"
    target.mkdir(parents=True, exist_ok=True)
    docs = read_jsonl(corpus_file)
    if max_docs:  # the documents in `keep` (the judged ones) first, then the corpus in order
        keep = keep or set()
        docs = ([d for d in docs if d["_id"] in keep] + [d for d in docs if d["_id"] not in keep])[:max_docs]
    for doc in docs:
        text = f"{doc.get('title', '')}\n\n{doc.get('text', '')}".strip() + "\n"
        path = target / f"{doc['_id']}.txt"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return len(docs)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, score = line.split("\t")
        qrels.setdefault(qid, {})[did] = int(score)
    return qrels


def doc_ranking(ids: list[str]) -> list[str]:
    """Chunk ids to distinct document ids, first occurrence wins."""
    seen: dict[str, None] = {}
    for cid in ids:
        seen.setdefault(Path(source_of(cid)).stem, None)
    return list(seen)


def ndcg_at(ranking: list[str], relevant: dict[str, int], k: int) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    ideal = sum(r / math.log2(i + 2) for i, r in enumerate(sorted(relevant.values(), reverse=True)[:k]))
    return dcg / ideal if ideal else 0.0


def recall_at(ranking: list[str], relevant: dict[str, int], k: int) -> float:
    return len(set(ranking[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def evaluate(
    name: str, run: Callable[[str], list[str]], queries: list[dict], qrels: dict[str, dict[str, int]]
) -> dict[str, float]:
    """One configuration: nDCG@10, recall@100 and latency percentiles over the judged queries."""
    ndcgs, recalls, latencies = [], [], []
    for query in queries:
        started = time.perf_counter()
        ids = run(query["text"])
        latencies.append((time.perf_counter() - started) * 1000)
        ranking = doc_ranking(ids)
        ndcgs.append(ndcg_at(ranking, qrels[query["_id"]], 10))
        recalls.append(recall_at(ranking, qrels[query["_id"]], 100))
    latencies.sort()
    figures = {
        "ndcg": statistics.mean(ndcgs),
        "recall": statistics.mean(recalls),
        "p50": statistics.median(latencies),
        "p95": latencies[int(0.95 * (len(latencies) - 1))],
    }
    print(
        f"{name:44s} nDCG@10 {figures['ndcg']:.4f}  recall@100 {figures['recall']:.4f}  "
        f"p50 {figures['p50']:6.1f} ms  p95 {figures['p95']:6.1f} ms  (n={len(queries)})",
        flush=True,
    )
    return figures


def langchain_ensemble(settings: Settings, project: str) -> Callable[[str], list[str]]:
    """LangChain's EnsembleRetriever: BM25Retriever + Chroma (the project's collection, the same MiniLM), RRF."""
    from langchain_chroma import Chroma
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document

    from ragstream.embedding.embedder import RagstreamEmbeddings
    from ragstream.index.catalog import catalog_of, committed_snapshot
    from ragstream.index.store import chroma_client, collection_name
    from ragstream.tenancy.projects import project_paths

    paths = project_paths(settings, project)
    snapshot = committed_snapshot(catalog_of(settings), paths)
    assert snapshot is not None  # ingested just before
    documents = [Document(page_content=c.text, metadata={"chunk": c.id}) for c in snapshot.chunks]
    bm25 = BM25Retriever.from_documents(documents, k=100)
    chroma = Chroma(
        client=chroma_client(settings, paths),
        collection_name=collection_name(project, settings.embedding),
        embedding_function=RagstreamEmbeddings(settings),
    )
    ensemble = EnsembleRetriever(retrievers=[bm25, chroma.as_retriever(search_kwargs={"k": 100})], weights=[0.5, 0.5])
    by_text = {c.text: c.id for c in snapshot.chunks}
    return lambda text: [d.metadata.get("chunk") or by_text[d.page_content] for d in ensemble.invoke(text)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="BEIR folder: corpus.jsonl[.gz], queries.jsonl, qrels/"
    )
    parser.add_argument("--split", default="train")
    parser.add_argument("--work", type=Path, default=Path("data/bench"), help="data root for the bench project")
    parser.add_argument("--limit", type=int, default=0, help="evaluate only the first N judged queries")
    parser.add_argument(
        "--max-docs", type=int, default=0, help="ingest only N documents, the judged ones first (quicker runs)"
    )
    parser.add_argument(
        "--peers", action="store_true", help="also measure LangChain's EnsembleRetriever (pip install -e '.[bench]')"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a settings override for every configuration, e.g. embedding.backend=onnx",
    )
    parser.add_argument(
        "--backends",
        nargs="+",
        default=[],
        metavar="BACKEND",
        help="embedding.backend variants to compare side by side (each in WORK/BACKEND)",
    )
    args = parser.parse_args()
    overrides = dict(item.split("=", 1) for item in args.set)
    if not args.backends:
        run(args, overrides, args.work, full=True)
        return
    table = []
    for backend in args.backends:
        print(f"== embedding.backend={backend}", flush=True)
        rate, figures = run(args, {**overrides, "embedding.backend": backend}, args.work / backend, full=False)
        table.append((backend, rate, figures))
    print(f"\n{'backend':14s} {'chunks/s':>9s} {'nDCG@10 dense':>14s} {'nDCG@10 shipped':>16s}")
    for backend, rate, figures in table:
        print(f"{backend:14s} {rate:9.1f} {figures['DENSE']:14.4f} {figures['shipped']:16.4f}")


def run(args: argparse.Namespace, overrides: dict[str, str], work: Path, full: bool) -> tuple[float, dict[str, float]]:
    """Ingest, then evaluate; `full` measures every strategy (and the peers when asked), else dense and shipped."""
    project = args.data.name
    settings: Settings = load_settings(overrides={**overrides, "data_dir": str(work)})
    qrels = read_qrels(args.data / "qrels" / f"{args.split}.tsv")
    judged = {doc for relevant in qrels.values() for doc in relevant}
    n_docs = write_corpus(args.data, settings.data_dir / "doc_raw" / project, args.max_docs, judged)

    manager = IngestionManager(settings)
    stats = manager.ingest(project)
    print(stats.summary())
    rate = stats.chunks_written / stats.seconds if stats.chunks_written else 0.0
    if stats.chunks_written:
        print(
            f"ingestion: {n_docs} docs, {stats.chunks_written} chunks embedded in {stats.seconds:.1f}s = {rate:.1f} "
            "chunks/s"
        )
    again = manager.ingest(project)
    print(f"re-ingest unchanged: {again.seconds:.2f}s ({again.unchanged} unchanged, {again.chunks_written} written)")
    if args.max_docs:
        print(
            "(a partial corpus, the judged documents first: quality figures compare configurations of this run, "
            "not with the full benchmark)"
        )

    queries = [q for q in read_jsonl(args.data / "queries.jsonl") if q["_id"] in qrels]
    if args.limit:
        queries = queries[: args.limit]

    searcher = build_searcher(settings, project)
    reranker = build_reranker(settings)
    if args.peers and full:
        evaluate("LangChain EnsembleRetriever (BM25 + Chroma)", langchain_ensemble(settings, project), queries, qrels)
    figures = {}
    strategies = (Strategy.DENSE, Strategy.KEYWORD, Strategy.EXPLORATORY, Strategy.HYBRID)
    for strategy in strategies if full else (Strategy.DENSE,):
        result = evaluate(strategy.value, lambda text, s=strategy: searcher.retrieve([text], s).ids, queries, qrels)
        figures[strategy.value] = result["ndcg"]

    def shipped(text: str) -> list[str]:
        result = searcher.retrieve([text], Strategy.HYBRID)
        chunks = [searcher.snapshot().chunk(cid) for cid in result.ids]
        return [c.id for c in rerank(text, chunks, reranker, searcher)[0]]

    figures["shipped"] = evaluate(f"shipped defaults: HYBRID + {reranker.name} reranker", shipped, queries, qrels)[
        "ndcg"
    ]
    return rate, figures


if __name__ == "__main__":
    main()

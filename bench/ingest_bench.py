"""Ingestion against the embedding model's own ceiling, on the same machine and corpus; and its linearity.

Default: SciFact abstracts (`--docs`, one Markdown file each) are ingested by the real IngestionManager
with `embedding.threads` = 1, 2, ... (`--workers`; the embedding model loaded first) into a fresh data
root each; then the very texts it embedded (each chunk's indexed text) go through the bare model: the
ONNX graph the product wrote, the tokenizer without padding, length-sorted batches of `--batch` (16),
one single-threaded onnxruntime session per worker process. For each worker count the bench prints
chunks per CPU second (all threads and processes) and chunks/s of wall time for both, the product's
share of the bare model per CPU second, and where the product's time went besides embedding (secret
scan, cutting, store writes, the index with BM25, reading). A shared machine's wall time mostly measures
the wait for a core, so the CPU figures are the honest comparison there; the wall figures show whether
the workers run at once. The int8 graph quantizes activations per run, so the product embeds int8 one
text at a time (a vector must not depend on its batch): `--batch 1` gives the bare model at that batch.

`--layouts`: the older linearity bench: `--mb` megabytes of the same abstracts in one file and in
`--files` files, each ingested once; linear when both ratios stay near 1.

Run: python bench/ingest_bench.py [--docs 800] [--workers 1 2] [--batch 16] [--work data/bench-ingest]
     python bench/ingest_bench.py --layouts [--mb 4] [--files 400] [--set KEY=VALUE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from retrieval_eval import DEFAULT_DATA  # bench/ is the script's folder: shared/data/scifact, found from a worktree

from ragstream.code.symbols import index_text
from ragstream.embedding.embedder import get_embedder
from ragstream.index.snapshot import load_snapshot
from ragstream.ingestion.manager import IngestionManager, IngestionStats
from ragstream.settings import Settings, load_settings
from ragstream.tenancy.projects import project_paths


def markdown_sections(data: Path, limit_bytes: int) -> list[str]:
    """SciFact abstracts as Markdown sections, in corpus order, until `limit_bytes` of UTF-8."""
    sections, size = [], 0
    with gzip.open(data / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            section = f"## {doc.get('title', '').strip()}\n\n{doc.get('text', '').strip()}\n\n"
            sections.append(section)
            size += len(section.encode("utf-8"))
            if size >= limit_bytes:
                return sections
    raise SystemExit(f"{data} holds only {size} bytes of text, fewer than {limit_bytes}")


def write_layouts(sections: list[str], root: Path, n_files: int) -> dict[str, Path]:
    one, many = root / "one-file", root / f"{n_files}-files"
    for folder in (one, many):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    (one / "corpus.md").write_text("# SciFact abstracts\n\n" + "".join(sections), encoding="utf-8")
    for i in range(n_files):  # n_files files of nearly equal numbers of abstracts
        part = sections[i * len(sections) // n_files : (i + 1) * len(sections) // n_files]
        (many / f"part-{i:04d}.md").write_text("".join(part), encoding="utf-8")
    return {"one file": one, f"{n_files} files": many}


def ingest(layout: Path, work: Path, overrides: dict[str, str]) -> tuple[IngestionStats, float]:
    data_dir = work / f"data-{layout.name}"
    shutil.rmtree(data_dir, ignore_errors=True)
    settings = load_settings(overrides={**overrides, "data_dir": str(data_dir)})
    get_embedder(settings.embedding, settings.models_dir)
    cpu = time.process_time()
    stats = IngestionManager(settings).ingest("bench", layout)
    return stats, time.process_time() - cpu


def write_abstracts(data: Path, folder: Path, docs: int) -> None:
    """The first `docs` SciFact abstracts, one Markdown file each."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with gzip.open(data / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        for n, line in enumerate(handle):
            if n == docs:
                return
            doc = json.loads(line)
            text = f"# {doc.get('title', '').strip()}\n\n{doc.get('text', '').strip()}\n"
            (folder / f"doc-{n:05d}.md").write_text(text, encoding="utf-8")


def product(
    folder: Path, work: Path, overrides: dict[str, str], workers: int
) -> tuple[IngestionStats, float, Settings]:
    """`ragstream ingest`'s own code with `workers` embedding workers: its stats and the CPU seconds it took."""
    data_dir = work / f"data-{workers}w"
    shutil.rmtree(data_dir, ignore_errors=True)
    settings = load_settings(overrides={**overrides, "data_dir": str(data_dir), "embedding.threads": workers})
    get_embedder(settings.embedding, settings.models_dir)
    cpu = time.process_time()
    stats = IngestionManager(settings).ingest("bench", folder)
    return stats, time.process_time() - cpu, settings


def _bare_worker(onnx: str, tokenizer: str, texts: list[str], batch: int, max_tokens: int, start: Any) -> tuple:
    """One worker process: a single-threaded session on its share of the texts (timed after loading)."""
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer)
    tok.no_padding()
    tok.enable_truncation(max_length=max_tokens)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(onnx, options, providers=["CPUExecutionProvider"])
    start.wait()
    began, cpu = time.perf_counter(), time.process_time()
    encoded = tok.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
    for at in range(0, len(order), batch):
        rows = order[at : at + batch]
        width = max(len(encoded[i].ids) for i in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for r, i in enumerate(rows):
            ids[r, : len(encoded[i].ids)] = encoded[i].ids
            mask[r, : len(encoded[i].ids)] = 1
        session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
    return time.process_time() - cpu, began, time.perf_counter()


def bare(settings: Settings, texts: list[str], workers: int, batch: int) -> tuple[float, float]:
    """The bare model over `texts` with `workers` processes: (CPU seconds summed, wall seconds)."""
    from ragstream.embedding.embedder import _cached
    from ragstream.embedding.model_files import resolve_model_dir

    onnx = str(_cached(settings.embedding, settings.models_dir.resolve()).onnx_path)  # type: ignore[attr-defined]
    tokenizer = str(resolve_model_dir(settings.embedding) / "tokenizer.json")
    ordered = sorted(texts, key=len)
    shares = [ordered[w::workers] for w in range(workers)]  # each worker gets texts of every length
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(workers) as pool:
        start = manager.Barrier(workers)
        args = [(onnx, tokenizer, share, batch, settings.embedding.max_input_tokens, start) for share in shares]
        results = pool.starmap(_bare_worker, args)
    return sum(r[0] for r in results), max(r[2] for r in results) - min(r[1] for r in results)


def compare(args: argparse.Namespace, overrides: dict[str, str]) -> None:
    folder = args.work / "sources" / f"scifact-{args.docs}"
    write_abstracts(args.data, folder, args.docs)
    print(f"{args.docs} SciFact abstracts; bare batch {args.batch}; {multiprocessing.cpu_count()} cores", flush=True)
    print(
        f"{'workers':>7} | {'bare /CPU-s':>11} {'bare /s':>8} | {'ingest /CPU-s':>13} {'ingest /s':>9} | ratio | other"
    )
    for workers in args.workers:
        stats, cpu, settings = product(folder, args.work, overrides, workers)
        paths = project_paths(settings, "bench")
        snap = load_snapshot(paths.index_dir, stats.generation)
        texts = [index_text(c) for c in snap.chunks]
        bare_cpu, bare_wall = bare(settings, texts, workers, args.batch)
        n = stats.chunks_written
        other = ", ".join(
            f"{k} {v:.1f}s" for k, v in sorted(stats.phases.items(), key=lambda kv: -kv[1]) if k != "embed"
        )
        ratio = (n / cpu) / (len(texts) / bare_cpu)
        print(
            f"{workers:>7} | {len(texts) / bare_cpu:>11.1f} {len(texts) / bare_wall:>8.1f} | {n / cpu:>13.1f} "
            f"{n / stats.seconds:>9.1f} | {ratio:>5.2f} | embed {stats.phases.get('embed', 0):.1f}s; {other}",
            flush=True,
        )
    lengths = [len(t) for t in texts]
    print(f"{len(texts)} chunks, median {statistics.median(lengths):.0f} characters; figures are chunks")


def layouts(args: argparse.Namespace, overrides: dict[str, str]) -> None:
    sections = markdown_sections(args.data, int(args.mb * 1_000_000))
    seconds, cpu_rates = {}, []
    for name, folder in write_layouts(sections, args.work / "sources", args.files).items():
        stats, cpu = ingest(folder, args.work, overrides)
        seconds[name] = stats.seconds
        cpu_rates.append(stats.chunks_written / cpu)
        phases = ", ".join(f"{k} {v:.1f}s" for k, v in sorted(stats.phases.items(), key=lambda kv: -kv[1]))
        print(
            f"{name:10s} {stats.files_seen:4d} files, {stats.chunks_written} chunks in {stats.seconds:.1f}s = "
            f"{stats.chunks_written / stats.seconds:.1f} chunks/s, {stats.chunks_written / cpu:.1f} chunks per CPU "
            "second "
            f"({phases})",
            flush=True,
        )
    one, many = seconds.values()
    print(
        f"many files / one file: {many / one:.2f}x the time, {cpu_rates[1] / cpu_rates[0]:.2f}x the chunks per CPU "
        "second "
        f"({args.mb:g} MB, {len(sections)} abstracts)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a BEIR folder with corpus.jsonl.gz")
    parser.add_argument("--docs", type=int, default=800, help="abstracts to ingest (one file each)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="embedding worker counts")
    parser.add_argument("--batch", type=int, default=16, help="the bare model's batch size")
    parser.add_argument("--layouts", action="store_true", help="the linearity bench (one file vs many)")
    parser.add_argument("--mb", type=float, default=4.0, help="--layouts: megabytes of Markdown")
    parser.add_argument("--files", type=int, default=400, help="--layouts: how many files the second layout has")
    parser.add_argument("--work", type=Path, default=Path("data/bench-ingest"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a settings override")
    args = parser.parse_args()
    overrides = dict(item.split("=", 1) for item in args.set)
    if "models_path" not in overrides:
        overrides["models_path"] = str(args.work / "models")  # one export for every run
    (layouts if args.layouts else compare)(args, overrides)


if __name__ == "__main__":
    main()

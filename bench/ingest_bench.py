"""Ingestion throughput at size: one large Markdown file against the same text in many files.

The text is SciFact's corpus written as Markdown (a `##` heading per abstract, then its text) up to
`--mb` megabytes; the same text is also cut at abstract boundaries into `--files` files. Each layout
is ingested into a fresh data root by the real IngestionManager (the embedding model loaded first, so
neither pays for it), and the bench prints per layout: seconds, chunks, chunks/s, chunks per CPU
second (all threads of this process; on a shared machine wall time depends on the neighbours, CPU
time much less), and where the time went (IngestionStats.phases). The last line compares the two
layouts: ingestion is linear when both ratios stay near 1 (on a busy machine, trust the CPU one).

Run: python bench/ingest_bench.py [--mb 4] [--files 400] [--work data/bench-ingest] [--set KEY=VALUE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import time
from pathlib import Path

from retrieval_eval import DEFAULT_DATA  # bench/ is the script's folder: shared/data/scifact, found from a worktree

from ragstream.embedding import get_embedder
from ragstream.ingestion.manager import IngestionManager, IngestionStats
from ragstream.settings import load_settings


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a BEIR folder with corpus.jsonl.gz")
    parser.add_argument("--mb", type=float, default=4.0, help="megabytes of Markdown")
    parser.add_argument("--files", type=int, default=400, help="how many files the second layout has")
    parser.add_argument("--work", type=Path, default=Path("data/bench-ingest"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a settings override")
    args = parser.parse_args()
    overrides = dict(item.split("=", 1) for item in args.set)
    if "models_path" not in overrides:
        overrides["models_path"] = str(args.work / "models")  # one export for both layouts

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


if __name__ == "__main__":
    main()

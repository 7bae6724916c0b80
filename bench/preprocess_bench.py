"""PreProcessing speed on large prompts: prints the median of several runs per size, and that of reading the
ask's parts (clauses and enumerated items, `asking_parts`), which A3, A4 and retrieval read on every run.

Run: python bench/preprocess_bench.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

from ragstream.gate.ask_parts import asking_parts
from ragstream.preprocessing import preprocess
from ragstream.settings import load_settings
from ragstream.text.chunking import Chunker

PARAGRAPH = (
    "The retriever fuses dense vectors and BM25 with reciprocal rank fusion; each chunk keeps "
    "its path, sha256 and character span so the final prompt can cite it. "
)


def _prompts(size: int) -> dict[str, str]:
    body = (PARAGRAPH * (size // len(PARAGRAPH) + 1))[:size]
    sections = "".join(f"# {name}\n{body[: size // 4]}\n" for name in ("Task", "Context", "Purpose", "Notes"))
    listed = "How should we configure it? We care about:\n" + "".join(
        f"Item {i}:\n- the retriever fuses dense vectors\n- each chunk keeps its path\n" for i in range(size // 80)
    )
    return {"plain": body, "markdown": sections[:size], "lists": listed[:size]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    settings = load_settings()
    chunker = Chunker.from_settings(settings)
    preprocess("warm up", settings, chunker=chunker)
    for size in (10_000, 100_000, 1_000_000):
        for kind, prompt in _prompts(size).items():
            times, asks = [], []
            for _ in range(args.runs):
                start = time.perf_counter()
                sp = preprocess(prompt, settings, chunker=chunker)
                times.append(time.perf_counter() - start)
                start = time.perf_counter()
                parts = asking_parts(sp, settings)
                asks.append(time.perf_counter() - start)
            pieces = len(sp.preprocessing.pieces) if sp.preprocessing else 0
            print(
                f"{kind:9s} {len(prompt):>9,d} chars  median {statistics.median(times) * 1000:8.1f} ms"
                f"  max {max(times) * 1000:8.1f} ms  pieces {pieces}"
                f"  asking parts {len(parts)} in median {statistics.median(asks) * 1000:8.1f} ms"
            )


if __name__ == "__main__":
    main()

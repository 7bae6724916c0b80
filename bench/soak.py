"""A long-lived process running many auto runs: does it stay flat, and how long does a warm run take?

One process, one set of services and one SQLite checkpointer shared by a new controller per run (as
the GUI and the LangGraph server do), the local provider, a SciFact project, a different claim per
run. Printed: the median warm auto-run time (wall, and CPU time of the whole process: on a shared
machine the wall time mostly measures the wait for a core), resident memory after the warm-up and at the end, and
the growth per run after the warm-up (a leak shows as a steady positive slope). With --profile, the
warm runs also print each stage's median time (from the stage events) and a cProfile of the warm loop:
the functions with the most cumulative time, where a fix would pay.

Run: python bench/soak.py [--runs 300] [--warmup 10] [--docs 0 (all)] [--work data/bench-soak] [--profile 30]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.retrieval_eval import DEFAULT_DATA, read_jsonl, write_corpus  # noqa: E402
from ragstream.app.session import RunSession  # noqa: E402
from ragstream.app.workspace import Workspace  # noqa: E402
from ragstream.ingestion.manager import IngestionManager  # noqa: E402
from ragstream.orchestration.checkpoint import sqlite_checkpointer  # noqa: E402
from ragstream.services import Services  # noqa: E402
from ragstream.settings import load_settings  # noqa: E402


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares MB per run."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--docs", type=int, default=0, help="ingest only the first N SciFact documents (0: all)")
    parser.add_argument("--work", type=Path, default=Path("data/bench-soak"))
    parser.add_argument("--profile", type=int, default=0, help="print per-stage medians and the top N functions")
    args = parser.parse_args()

    settings = load_settings(overrides={"data_dir": str(args.work), "llm.provider": "local"})
    write_corpus(DEFAULT_DATA, settings.data_dir / "doc_raw" / "scifact", args.docs)
    IngestionManager(settings).ingest("scifact")
    claims = [q["text"] for q in read_jsonl(DEFAULT_DATA / "queries.jsonl")]
    services = Services(settings)
    checkpointer = sqlite_checkpointer(settings.data_dir / "soak-checkpoints.sqlite")

    walls: list[float] = []
    cpus: list[float] = []
    samples: list[tuple[int, float]] = []
    warm_rss = 0.0
    stage_ms: dict[str, list[float]] = {}
    profiler = cProfile.Profile() if args.profile else None
    for run in range(1, args.runs + 1):
        ctl = RunSession(Workspace(settings, services), checkpointer=checkpointer, thread_id=uuid.uuid4().hex)
        ctl.select_project("scifact")
        if profiler and run > args.warmup:
            ctl.on_event = lambda e: (
                e["event"] == "stage_finish" and stage_ms.setdefault(e["stage"], []).append(e["duration_ms"])
            )
            profiler.enable()
        prompt = f"# Task\nIs this claim supported? {claims[run % len(claims)]}\n# Format\nbullet list"
        started, cpu = time.perf_counter(), time.process_time()
        ctl.run_full_pipeline(prompt, pause_after="none")
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
        if profiler:
            profiler.disable()
        del ctl
        if run == args.warmup:
            gc.collect()
            warm_rss = rss_mb()
        if run >= args.warmup and (run % 10 == 0 or run == args.runs):
            samples.append((run, rss_mb()))
            print(f"run {run:4d}: RSS {samples[-1][1]:7.1f} MB", flush=True)
    gc.collect()
    end_rss = rss_mb()
    warm_walls = walls[args.warmup :]
    print(
        f"warm auto run (local provider, SciFact): p50 {statistics.median(warm_walls):.3f} s, "
        f"p95 {sorted(warm_walls)[int(0.95 * (len(warm_walls) - 1))]:.3f} s (n={len(warm_walls)}); "
        f"CPU p50 {statistics.median(cpus[args.warmup :]):.3f} s"
    )
    print(
        f"RSS after {args.warmup} warm-up runs {warm_rss:.1f} MB, after {args.runs} runs {end_rss:.1f} MB "
        f"(+{end_rss - warm_rss:.1f} MB); growth {slope(samples) * 1000:.1f} kB per run after the warm-up"
    )
    if profiler:
        print("stage medians (ms): " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in stage_ms.items()))
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)


if __name__ == "__main__":
    main()

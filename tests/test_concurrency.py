"""Concurrent pipelines on one project and one SQLite file; ingestion while queries run."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ragstream.app.controller import AppController
from ragstream.index.manifest import Manifest
from ragstream.index.snapshot import load_snapshot
from ragstream.ingestion.manager import IngestionManager
from ragstream.orchestration.checkpoint import sqlite_checkpointer
from ragstream.retrieval.factory import build_searcher
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.strategies import Strategy
from ragstream.tenancy.projects import project_paths
from tests.fixtures_docs import make_project

TOPICS = [
    "ingestion manifests",
    "reciprocal rank fusion",
    "the A4 pause",
    "excerpt fences",
    "SQLite checkpoints",
    "BM25 stemming",
    "the fallback ladder",
    "token budgets",
]


def test_eight_pipelines_at_once_on_one_sqlite_file(indexed: Settings, tmp_path: Path) -> None:
    services = Services(indexed)
    checkpointer = sqlite_checkpointer(tmp_path / "shared.sqlite")

    def run(i: int):
        ctl = AppController(indexed, checkpointer=checkpointer, services=services, thread_id=f"worker-{i}")
        ctl.select_project("demo")
        prompt = f"# Task\nExplain {TOPICS[i]} (request {i})."
        return i, ctl.run_full_pipeline(prompt, pause_after="none")

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(run, range(8)))
    for i, sp in results:
        assert sp.stage.value == "built"
        assert sp.raw_prompt.endswith(f"(request {i}).")
        assert f"(request {i})" in sp.prompt_ready
        assert all(f"(request {j})" not in sp.prompt_ready for j in range(8) if j != i)
    for i in range(8):  # and what the shared file holds per thread is that thread's own run
        again = AppController(indexed, checkpointer=checkpointer, services=services, thread_id=f"worker-{i}").sp
        assert again.raw_prompt.endswith(f"(request {i}).")


def test_queries_during_ingest_see_whole_generations(tmp_path: Path) -> None:
    settings = load_settings(overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local"})
    raw = make_project(settings.data_dir / "doc_raw" / "live", awkward=False)
    IngestionManager(settings).ingest("live")
    searcher = build_searcher(settings, "live")
    stop = threading.Event()
    problems: list[str] = []
    seen_generations: set[int] = set()

    def query() -> None:
        while not stop.is_set():
            try:
                result = searcher.retrieve(["how are chunks fused and documents ingested"], Strategy.HYBRID)
                snapshot = load_snapshot(searcher.paths.index_dir, result.generation)
                missing = [cid for cid in result.ids if cid not in snapshot.by_id]
                if missing:
                    problems.append(f"generation {result.generation} returned unknown ids {missing}")
                seen_generations.add(result.generation)
            except Exception as exc:  # anything at all is a failure here
                problems.append(repr(exc))

    readers = [threading.Thread(target=query) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        manager = IngestionManager(settings)
        for round_ in range(6):
            (raw / f"new-{round_}.md").write_text(
                f"# Note {round_}\nFusion detail number {round_}.\n" * 20, encoding="utf-8"
            )
            if round_ % 2:
                (raw / f"new-{round_ - 1}.md").unlink()
            manager.ingest("live")
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert problems == []
    assert len(seen_generations) >= 2


def test_a_servers_first_queries_arriving_together_share_one_loaded_index(tmp_path: Path) -> None:
    settings = load_settings(overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local"})
    make_project(settings.data_dir / "doc_raw" / "fresh", awkward=False)
    IngestionManager(settings).ingest("fresh")
    paths = project_paths(settings, "fresh")
    generation = Manifest.load(paths.manifest_path).generation  # not loaded by anyone yet
    start = threading.Barrier(8)

    def first_query(_: int) -> int:
        start.wait()
        return id(load_snapshot(paths.index_dir, generation))

    with ThreadPoolExecutor(max_workers=8) as pool:
        loaded = set(pool.map(first_query, range(8)))
    assert len(loaded) == 1, "concurrent first queries each loaded (and kept) their own copy of the index"

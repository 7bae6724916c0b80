"""Retrieval as a user meets it through `ragstream run`: a damaged dense index goes through the failure
policy (the dense retriever's failure recorded, BM25 answering, a typed error where nothing can answer),
and a low-confidence retrieval re-runs with the other strategies, recorded in the run metadata.

Each project is ingested by `ragstream ingest` into a real Chroma store; the damage is done the way it
happens to a user: an index generation whose vectors have another width (written by another embedding
model), or hold NaN (a damaged file: Chroma itself refuses NaN, so only the generation's file can hold it).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import streamlit

from ragstream.index.manifest import committed_generation, generation_dir
from ragstream.settings import load_settings
from ragstream.tenancy.projects import project_paths

pytestmark = pytest.mark.slow  # subprocess CLIs

NOTES = (
    "# Nightly maintenance\n\nThe nightly job rebuilds the search index from the raw folder.\n\n"
    "The cleanup task prunes the cache every Sunday and keeps the last two generations.\n"
)
ASK = "How does the nightly job rebuild the search index?"
DOCS = Path(streamlit.__file__).parent / ".agents" / "skills" / "developing-with-streamlit" / "references"


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAGSTREAM_DATA_DIR": str(data)}
    return subprocess.run(["ragstream", *args], capture_output=True, text=True, cwd=data.parent, env=env, timeout=300)


def _ingested(tmp_path: Path, files: dict[str, str]) -> Path:
    source = tmp_path / "docs"
    source.mkdir()
    for name, text in files.items():
        (source / name).write_text(text, encoding="utf-8")
    data = tmp_path / "data"
    out = _cli(data, "ingest", "demo", "--path", str(source), "--quiet")
    assert out.returncode == 0, out.stderr
    return data


def _damage(data: Path, vectors: Callable[[np.ndarray], np.ndarray]) -> None:
    paths = project_paths(load_settings(overrides={"data_dir": str(data)}), "demo")
    folder = generation_dir(paths.index_dir, committed_generation(paths.manifest_path))
    assert (paths.chroma_dir / "chroma.sqlite3").is_file()  # a real Chroma store beside the generation
    np.save(folder / "vectors.npy", vectors(np.load(folder / "vectors.npy")))


def _run_json(data: Path, *args: str) -> tuple[dict, str]:
    out = _cli(data, "run", ASK, "--project", "demo", "--json", *args)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return json.loads(out.stdout), out.stderr


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (
            lambda v: np.ones((len(v), 7), dtype=np.float32),
            "the index holds 7-dimensional vectors but the embedder gives 384",
        ),
        (lambda v: np.full(v.shape, np.nan, dtype=np.float32), "stored vectors hold NaN or infinite values"),
    ],
    ids=["wrong-width", "nan"],
)
def test_a_damaged_dense_index_fails_the_dense_retriever_and_bm25_answers(
    tmp_path: Path, damage: Callable[[np.ndarray], np.ndarray], reason: str
) -> None:
    data = _ingested(tmp_path, {"notes.md": NOTES})
    _damage(data, damage)
    result, stderr = _run_json(data)
    assert reason in stderr and "retriever vector failed" in stderr  # recorded, and said where the user looks
    assert "The nightly job rebuilds the search index from the raw folder." in result["prompt_ready"]
    assert 'excerpt source="notes.md"' in result["prompt_ready"]
    retrieval = result["run_metadata"]["retrieval"]
    assert retrieval["failure"] == "" and retrieval["candidates"] == 1
    assert retrieval["confidence"] is not None and 0.0 <= retrieval["confidence"] <= 1.0  # never NaN

    dense_only = _cli(data, "run", ASK, "--project", "demo", "--strategy", "DENSE")
    assert dense_only.returncode == 2 and "Traceback" not in dense_only.stderr
    assert "every retriever failed" in dense_only.stderr and reason in dense_only.stderr

    assert _cli(data, "ingest", "demo", "--quiet").returncode == 0  # as the message advises: the index is whole again
    _, stderr = _run_json(data)
    assert "retriever vector failed" not in stderr


def test_a_low_confidence_retrieval_re_runs_and_keeps_the_better_attempt(tmp_path: Path) -> None:
    files = {name: (DOCS / name).read_text(encoding="utf-8") for name in ("cli.md", "session-state.md", "theme.md")}
    data = _ingested(tmp_path, files)
    out = _cli(data, "run", "How should I size the worker pool for background jobs?", "--project", "demo", "--json")
    assert out.returncode == 0, out.stderr
    meta = json.loads(out.stdout)["run_metadata"]
    settings = load_settings()
    assert meta["plan"]["source"] == "rules"  # the strategy was not forced: the re-run rule applies
    retrieval = meta["retrieval"]
    assert retrieval["attempts"] == [
        meta["plan"]["strategy"] or "HYBRID",
        *settings.retrieval.confidence.rerun_strategies,
    ]
    trace = _cli(data, "trace", "--thread", json.loads(out.stdout)["thread_id"])
    assert f"re-run with {', '.join(retrieval['attempts'][1:])}" in trace.stdout
    assert retrieval["strategy"] != retrieval["attempts"][0]  # the first attempt was low, a later one better
    assert f"after {len(retrieval['attempts'])} attempts (low confidence re-run)" in out.stderr  # shown live
    assert retrieval["confidence"] >= settings.retrieval.confidence.low

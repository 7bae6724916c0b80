"""kill -9 at random points: ingestion and pipeline runs recover to exactly the uninterrupted result."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ragstream.app.controller import AppController
from ragstream.index.manifest import Manifest
from ragstream.ingestion.loader import load_document
from ragstream.ingestion.manager import IngestionManager
from ragstream.orchestration.checkpoint import sqlite_checkpointer
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.stages.options import RunOptions
from ragstream.tenancy.projects import project_paths
from ragstream.text.chunk_ids import chunk_id
from ragstream.text.chunking import Chunker

pytestmark = pytest.mark.slow  # subprocesses, servers, browsers or kills

WORDS = "retrieval fusion manifest chunk embedding checkpoint condenser excerpt budget ladder".split()


def _write_doc(folder: Path, name: str, seed: int) -> None:
    rng = random.Random(seed)
    paragraphs = [" ".join(rng.choice(WORDS) for _ in range(60)) + "." for _ in range(8)]
    (folder / name).write_text(f"# Doc {name} v{seed}\n\n" + "\n\n".join(paragraphs), encoding="utf-8")


def _kill_after(args: list[str], delay: float, env: dict[str, str]) -> int | None:
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        return proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def _ingest_watching_embed(args: list[str], env: dict[str, str], kill_after: float | None) -> float | None:
    """Run an ingest and watch its progress for the embed phase (shown once the first batch is embedded and
    handed to the store). With `kill_after`, kill -9 it that many seconds later and say whether the kill
    landed (None when it had finished); without, return how long it ran after the phase showed.
    Anchored to the work itself, a kill lands in the writes however busy the machine is."""
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stderr is not None
    seen = b""
    while b"embed" not in seen:
        got = proc.stderr.read1(4096)
        if not got:  # the run ended (or had nothing to embed) before the phase showed
            proc.wait()
            return None
        seen = seen[-16:] + got
    shown = time.perf_counter()
    if kill_after is None:
        proc.stderr.read()
        proc.wait()
        return time.perf_counter() - shown
    time.sleep(kill_after)
    if proc.poll() is not None:
        return None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return kill_after


def _rewrite_a_dozen(raw: Path, rng: random.Random, run: int) -> None:
    """One round of edits: about a dozen documents rewritten, one added, and every third round one deleted."""
    victims = rng.sample(sorted(p.name for p in raw.iterdir()), 12)
    if run % 3 == 0:
        (raw / victims.pop()).unlink()
    for victim in victims:
        _write_doc(raw, victim, 1000 * run + len(victim))
    _write_doc(raw, f"added{run:02d}.md", 2000 + run)


def test_kill_9_ingest_twenty_times_then_exact_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    raw = data / "doc_raw" / "crash"
    raw.mkdir(parents=True)
    for i in range(40):
        _write_doc(raw, f"doc{i:02d}.md", i)
    env = {**os.environ, "RAGSTREAM_DATA_DIR": str(data), "RAGSTREAM_LLM_PROVIDER": "local"}
    command = ["ragstream", "ingest", "crash"]
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rng = random.Random(20261122)
    _rewrite_a_dozen(raw, rng, 0)
    writes = _ingest_watching_embed(command, env, None)  # how long such a round writes after embedding shows
    assert writes is not None
    killed = 0
    for run in range(1, 41):
        if killed >= 12:
            break
        _rewrite_a_dozen(raw, rng, run)
        killed += _ingest_watching_embed(command, env, rng.uniform(0.0, writes * 0.8)) is not None
    assert killed >= 12, "the kills must land while ingestion is working"

    settings = load_settings(overrides={"data_dir": str(data), "llm.provider": "local"})
    manager = IngestionManager(settings)
    manager.ingest("crash")
    paths = project_paths(settings, "crash")
    chunker = Chunker.from_settings(settings)
    expected: set[str] = set()
    for path in sorted(raw.iterdir()):
        doc = load_document(path, settings.ingestion.max_file_bytes)
        expected |= {chunk_id(path.name, doc.sha256, i) for i in range(len(chunker.spans(doc.text)))}
    with manager.store(paths) as store:
        assert store.all_ids() == expected  # every current chunk, and nothing of deleted or older versions
        assert len(store.all_ids() or ()) == len(expected)
    assert Manifest.load(paths.manifest_path).chunk_ids() == expected


PROMPT = "# Task\nExplain how excerpts are fenced and how the A4 pause works.\n# Format\nbullet list"


def test_kill_9_pipeline_then_resume_gives_the_same_prompt(indexed: Settings, tmp_path: Path) -> None:
    services = Services(indexed)
    reference = AppController(indexed, checkpointer=sqlite_checkpointer(tmp_path / "ref.sqlite"), services=services)
    reference.select_project("demo")
    expected = reference.run_full_pipeline(PROMPT, pause_after="none").prompt_ready

    db = tmp_path / "ck.sqlite"
    env = {
        **os.environ,
        "RAGSTREAM_DATA_DIR": str(indexed.data_dir),
        "RAGSTREAM_LLM_PROVIDER": "local",
        "RAGSTREAM_CHECKPOINT_URL": f"sqlite:///{db}",
    }
    rng = random.Random(7)
    for attempt in range(3):
        thread = f"killed-{attempt}"
        _kill_after(["ragstream", "run", PROMPT, "--project", "demo", "--thread", thread], rng.uniform(6.0, 16.0), env)
        ctl = AppController(
            indexed.model_copy(update={"checkpoint_url": f"sqlite:///{db}"}),
            checkpointer=sqlite_checkpointer(db),
            services=services,
            thread_id=thread,
        )
        ctl.select_project("demo")
        ctl.options = RunOptions(pause_after="none")
        if ctl.paused_before:
            sp = ctl.resume()
        elif ctl.sp.stage.value == "built":
            sp = ctl.sp
        else:
            sp = ctl.run_full_pipeline(PROMPT, pause_after="none")
        assert sp.stage.value == "built"
        assert sp.prompt_ready == expected

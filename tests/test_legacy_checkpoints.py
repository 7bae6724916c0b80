"""Checkpoints written by version 0.1 (untyped extras, old stage names) load and resume."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from ragstream.app.controller import AppController
from ragstream.orchestration.checkpoint import sqlite_checkpointer
from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.stages import Stage

FIXTURE = Path(__file__).parent / "data" / "checkpoints_v0_1.sqlite.gz"
# A thread paused with pause_after="all" at the one shared `review` node the graph had before each stage got
# its own review: waiting there after A2.
SHARED_REVIEW = Path(__file__).parent / "data" / "checkpoints_shared_review.sqlite.gz"


def _unzipped(fixture: Path, db: Path) -> Path:
    with gzip.open(fixture, "rb") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return db


@pytest.fixture()
def legacy_db(tmp_path: Path) -> Path:
    return _unzipped(FIXTURE, tmp_path / "legacy.sqlite")


def _controller(indexed: Settings, db: Path, thread: str) -> AppController:
    ctl = AppController(indexed, services=Services(indexed), checkpointer=sqlite_checkpointer(db), thread_id=thread)
    ctl.select_project("demo")
    return ctl


def test_a_paused_v0_1_thread_loads_typed_and_resumes(indexed: Settings, legacy_db: Path) -> None:
    ctl = _controller(indexed, legacy_db, "legacy-paused")
    sp = ctl.sp
    assert sp.stage is Stage.A4
    assert sp.history_of_stages[0] is Stage.PREPROCESS and Stage.RERANK in sp.history_of_stages
    assert "reranked" in sp.views_by_stage and "rerank" not in sp.views_by_stage
    assert sp.extras.preprocess is not None and sp.extras.preprocess.task_rule == "TASK_PRESENT"
    assert sp.extras.a3 is not None and sp.extras.a3.decisions
    assert sp.extras.a4 is not None and sp.extras.a4.budget is not None
    assert sp.extras.project == "demo"
    assert [e.stage for e in sp.extras.edits] == ["a4"]
    built = ctl.resume()
    assert built.stage is Stage.BUILD
    assert "a person's note" in built.prompt_ready  # the edit made at the v0.1 pause survives
    assert built.extras.a5 is not None and built.extras.build is not None


def test_a_finished_v0_1_thread_loads_and_rebuilds(indexed: Settings, legacy_db: Path) -> None:
    ctl = _controller(indexed, legacy_db, "legacy-built")
    sp = ctl.sp
    assert sp.stage is Stage.BUILD and sp.extras.a5 is not None and sp.extras.a5.rules
    assert sp.prompt_ready.startswith("## System")
    rebuilt = ctl.build_prompt()
    assert rebuilt.stage is Stage.BUILD
    assert "~~~~condensed-context" in rebuilt.prompt_ready


def test_a_v0_1_thread_forced_to_a_seed_strategy_reads_it_in_todays_name(indexed: Settings, legacy_db: Path) -> None:
    saver = sqlite_checkpointer(legacy_db)
    stored = saver.get_tuple({"configurable": {"thread_id": "legacy-paused", "checkpoint_ns": ""}})
    assert stored is not None and stored.parent_config is not None
    retrieval = stored.checkpoint["channel_values"]["extras"]["retrieval"]
    retrieval["strategy"] = "SEMANTIC"  # what v0.1 wrote for `--strategy SEMANTIC`
    saver.put(stored.parent_config, stored.checkpoint, stored.metadata, {})
    ctl = _controller(indexed, legacy_db, "legacy-paused")
    assert ctl.sp.extras.retrieval is not None and ctl.sp.extras.retrieval.strategy == "KEYWORD"
    built = ctl.resume()
    assert built.stage is Stage.BUILD and built.run_metadata.retrieval.strategy == "KEYWORD"


def test_a_thread_waiting_at_the_shared_review_after_a2_resumes_to_the_next_review(
    indexed: Settings, tmp_path: Path
) -> None:
    ctl = _controller(indexed, _unzipped(SHARED_REVIEW, tmp_path / "shared.sqlite"), "legacy-review-a2")
    assert ctl.paused_before == ["review"] and ctl.waiting["after"] == "a2"
    resumed = ctl.resume()  # accepted, then on from A2's frontier to the review after A4 (the session's default)
    assert resumed.stage is Stage.A4 and ctl.paused_before == ["review"] and ctl.waiting["after"] == "a4"
    assert ctl.resume().stage is Stage.BUILD

"""Checkpoints written by earlier versions load and resume: version 0.1 (untyped extras, old stage names), the graph
with one shared review node, and main at ba47471 (before issue #39's restructure renamed the state's fields)."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from ragstream.app.cli import main
from ragstream.app.controller import AppController
from ragstream.orchestration.checkpoint import sqlite_checkpointer, state_serializer
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.stages import Stage
from ragstream.state.superprompt import SEED_NAMES
from tests.servers import link_indexed_project

FIXTURE = Path(__file__).parent / "data" / "checkpoints_v0_1.sqlite.gz"
# A thread paused with pause_after="all" at the one shared `review` node the graph had before each stage got
# its own review: waiting there after A2.
SHARED_REVIEW = Path(__file__).parent / "data" / "checkpoints_shared_review.sqlite.gz"
# Threads written by main at ba47471 on the `indexed` demo project (`write_ba47471_threads` made them).
BA47471 = Path(__file__).parent / "data" / "checkpoints_ba47471.sqlite.gz"
PROMPT = (Path(__file__).resolve().parents[1] / "examples" / "prompt.md").read_text(encoding="utf-8")
MANUAL_PROMPT = "How does ingestion decide which files to re-embed?"
NOTE = "- A person's note, typed at the ba47471 review."


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


def write_ba47471_threads(indexed: Settings, db: Path) -> None:
    """How tests/data/checkpoints_ba47471.sqlite.gz was written (by main at ba47471, then gzipped), to do it again.

    Four threads on the demo project: an auto run paused at the review after A4 (the default), the same with the
    condensed context edited at that review, a run straight to the built prompt, and a manual preprocess + A2."""
    saver = sqlite_checkpointer(db)
    services = Services(indexed)

    def session(thread: str) -> AppController:
        return AppController(indexed, services=services, checkpointer=saver, thread_id=thread)

    session("ba47471-paused").run_full_pipeline(PROMPT, project="demo")
    edited = session("ba47471-edited")
    condensed = edited.run_full_pipeline(PROMPT, project="demo").s_ctx_md
    edited.edit(s_ctx_md=f"{condensed.rstrip()}\n{NOTE}\n")
    session("ba47471-built").run_full_pipeline(PROMPT, project="demo", pause_after="none")
    manual = session("ba47471-manual")
    manual.select_project("demo")
    manual.preprocess(MANUAL_PROMPT)
    manual.run_a2()
    saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    saver.conn.execute("VACUUM")


@pytest.fixture()
def ba47471_db(tmp_path: Path) -> Path:
    return _unzipped(BA47471, tmp_path / "ba47471.sqlite")


def _user_lines(prompt: str) -> list[str]:
    """The lines of the user's prompt that the final prompt keeps verbatim (header lines may be normalized)."""
    return [line for line in prompt.splitlines() if line.strip() and not line.startswith("#")]


def _built(indexed: Settings, db: Path) -> str:
    """The final prompt main at ba47471 built for PROMPT (the finished thread's)."""
    return _controller(indexed, db, "ba47471-built").sp.prompt_ready


def test_a_ba47471_thread_paused_at_the_review_shows_its_condensed_context_and_resumes_to_the_same_prompt(
    indexed: Settings, ba47471_db: Path
) -> None:
    ctl = _controller(indexed, ba47471_db, "ba47471-paused")
    sp = ctl.sp
    assert sp.stage is Stage.A4 and sp.raw_prompt == PROMPT
    assert ctl.paused_before == ["review"] and ctl.waiting is not None
    assert ctl.waiting["kind"] == "review" and ctl.waiting["after"] == "a4"
    condensed = sp.s_ctx_md
    assert condensed.startswith("### Facts\n- RAGstream turns a raw prompt into a SuperPrompt in eight stages")
    assert "[architecture.md@38e92b941e#0]" in condensed
    assert sp.base_context_chunks and sp.final_selection_ids
    built = ctl.resume()
    assert built.stage is Stage.BUILD and ctl.paused_before == []
    assert condensed.strip() in built.prompt_ready
    assert all(line in built.prompt_ready for line in _user_lines(PROMPT))
    assert built.prompt_ready == _built(indexed, ba47471_db)  # the prompt ba47471 built for it, byte for byte


def test_a_ba47471_thread_edited_at_the_review_keeps_the_edit_in_the_final_prompt(
    indexed: Settings, ba47471_db: Path
) -> None:
    ctl = _controller(indexed, ba47471_db, "ba47471-edited")
    sp = ctl.sp
    assert sp.stage is Stage.A4 and sp.s_ctx_md.rstrip().endswith(NOTE)
    assert [e.stage for e in sp.extras.edits] == ["a4"]
    built = ctl.resume()
    assert built.stage is Stage.BUILD
    fence = built.prompt_ready.split("~~~~condensed-context", 1)[1].split("\n~~~~\n", 1)[0]
    assert NOTE in fence  # inside the condensed context, where the person typed it


def test_a_finished_ba47471_thread_reads_and_rebuilds_the_same_prompt(indexed: Settings, ba47471_db: Path) -> None:
    ctl = _controller(indexed, ba47471_db, "ba47471-built")
    sp = ctl.sp
    assert sp.stage is Stage.BUILD and ctl.paused_before == [] and ctl.waiting is None
    final = sp.prompt_ready
    assert final.startswith("## System") and "~~~~condensed-context" in final
    assert all(line in final for line in _user_lines(PROMPT))
    assert sp.s_ctx_md.strip() in final and sp.system_md and sp.prompt_md
    assert ctl.export_prompt("markdown") == final
    assert ctl.build_prompt().prompt_ready == final


def test_a_finished_ba47471_thread_prints_its_prompt_through_the_cli(
    indexed: Settings, ba47471_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings(overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local"})
    link_indexed_project(settings, indexed)
    shutil.copyfile(ba47471_db, settings.data_dir / "checkpoints.sqlite")
    data = ["--data-dir", str(settings.data_dir)]
    assert main([*data, "run", "--thread", "fresh", "--project", "demo", PROMPT]) == 0
    today = capsys.readouterr().out
    assert main([*data, "run", "--thread", "ba47471-built", "--project", "demo", PROMPT]) == 0
    assert capsys.readouterr().out == today  # a new run on the old thread builds what a new thread does
    assert main([*data, "resume", "--thread", "ba47471-paused"]) == 0
    assert capsys.readouterr().out == _built(indexed, ba47471_db)  # its own condensed context, built as then


def test_a_manual_ba47471_thread_goes_on_with_the_next_stage(indexed: Settings, ba47471_db: Path) -> None:
    ctl = _controller(indexed, ba47471_db, "ba47471-manual")
    sp = ctl.sp
    assert sp.stage is Stage.A2 and sp.raw_prompt == MANUAL_PROMPT and ctl.paused_before == []
    assert sp.history_of_stages == [Stage.PREPROCESS, Stage.A2]
    assert sp.body.task is not None and MANUAL_PROMPT in sp.body.task and not sp.base_context_chunks
    assert Stage.RETRIEVAL in ctl.allowed_stages()
    retrieved = ctl.run_retrieval()
    assert retrieved.stage is Stage.RETRIEVAL and retrieved.base_context_chunks
    assert any(chunk.source_path.endswith("ingestion.md") for chunk in retrieved.base_context_chunks)
    built = ctl.resume(pause_after="none")
    assert built.stage is Stage.BUILD and MANUAL_PROMPT in built.prompt_ready


def test_todays_code_writes_threads_that_stand_where_the_ba47471_ones_stand(
    indexed: Settings, ba47471_db: Path, tmp_path: Path
) -> None:
    fresh = tmp_path / "fresh.sqlite"
    write_ba47471_threads(indexed, fresh)
    for thread in ("ba47471-paused", "ba47471-edited", "ba47471-built", "ba47471-manual"):
        old, new = _controller(indexed, ba47471_db, thread), _controller(indexed, fresh, thread)
        assert (new.sp.stage, new.paused_before) == (old.sp.stage, old.paused_before)
        assert new.sp.history_of_stages == old.sp.history_of_stages
        # What the stages write may improve since ba47471 (more condensed lines, wider excerpts); where each
        # thread stands may not, and neither may what the user wrote there.
        assert (new.sp.raw_prompt, NOTE in new.sp.s_ctx_md) == (old.sp.raw_prompt, NOTE in old.sp.s_ctx_md)


def test_a_ba47471_checkpoint_keeps_its_seed_named_channels_and_reads_them_under_todays_names(
    ba47471_db: Path,
) -> None:
    """ba47471 stored the renamed fields' channels under the seed's names; every saver of ours reads them, their
    versions and what each node saw of them, under today's field names (LangGraph would drop them unread)."""
    config = {"configurable": {"thread_id": "ba47471-edited", "checkpoint_ns": ""}}
    stored = SqliteSaver(sqlite3.connect(str(ba47471_db)), serde=state_serializer()).get_tuple(config)
    read = sqlite_checkpointer(ba47471_db).get_tuple(config)
    assert stored is not None and read is not None
    old, new = stored.checkpoint, read.checkpoint
    assert "S_CTX_MD" in old["channel_values"] and "s_ctx_md" not in old["channel_values"]  # seed name
    for seed, field in SEED_NAMES.items():
        assert seed not in new["channel_versions"] and seed not in new["channel_values"]
        assert new["channel_values"].get(field) == old["channel_values"].get(seed)
        assert new["channel_versions"].get(field) == old["channel_versions"].get(seed)
        for node, seen in old["versions_seen"].items():
            assert new["versions_seen"][node].get(field) == seen.get(seed)
    assert new["channel_values"]["s_ctx_md"].rstrip().endswith(NOTE)

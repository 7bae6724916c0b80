"""The run-metadata record: a stable contract clients read, and a true description of the valid state."""

from __future__ import annotations

import json
from pathlib import Path

from ragstream.app.controller import AppController
from ragstream.orchestration.checkpoint import sqlite_checkpointer
from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.state import RunMetadata, SuperPrompt

SCHEMA = Path(__file__).parent / "data" / "run_metadata.schema.json"
PROMPT = "# Task\nHow are changed documents re-embedded during ingestion?"


def test_the_schema_is_the_published_contract() -> None:
    """Changing the record's shape must be deliberate: bump `schema_version` and update the published schema."""
    published = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert RunMetadata.model_json_schema() == published
    assert published["properties"]["schema_version"]["const"] == 1


def test_a_run_records_its_trace_retrieval_budgets_and_usage(indexed: Settings, tmp_path: Path) -> None:
    ctl = AppController(indexed, checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"), services=Services(indexed))
    ctl.select_project("demo")
    sp = ctl.run_full_pipeline(PROMPT, pause_after="none")
    meta = sp.run_metadata
    assert meta.trace_id == ctl.thread_id and meta.project == "demo" and meta.stage == "built"
    assert meta.retrieval is not None
    assert (meta.retrieval.strategy, meta.retrieval.rung) == (sp.extras.retrieval.strategy, sp.extras.retrieval.rung)
    assert meta.retrieval.candidates == len(sp.base_context_chunks) > 0
    assert meta.context_budget["excerpts"].used == sp.extras.build.budget.used
    assert meta.context_budget["condensed"].ceiling == indexed.budget.ceilings["a4"]
    assert set(meta.usage) == {s.node for s in sp.history_of_stages}
    calls = [e for e in ctl.trace() if e["event"] == "llm_call"]
    assert meta.total.calls == len(calls) and meta.total.tokens_in == sum(e["tokens_in"] for e in calls)
    # the record round-trips through the checkpoint exactly
    reread = AppController(indexed, checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"), thread_id=ctl.thread_id)
    assert reread.sp.run_metadata == meta


def test_the_record_never_describes_an_invalid_stage(indexed: Settings) -> None:
    ctl = AppController(indexed, services=Services(indexed))
    ctl.select_project("demo")
    ctl.run_full_pipeline(PROMPT, pause_after="none")
    sp = ctl.run_stage("preprocess", "# Task\nWhat does the manifest record?")
    meta = sp.run_metadata
    assert meta.stage == "preprocessed" and meta.retrieval is None and set(meta.context_budget) == {"memory"}
    assert set(meta.usage) == {"preprocess"}
    edited = ctl.run_full_pipeline("# Task\nWhat does the manifest record?", pause_after="a4")
    assert "excerpts" not in edited.run_metadata.context_budget  # not built yet
    assert ctl.edit(s_ctx_md="### Facts\n- a fact I know").run_metadata.stage == "a4"


def test_an_empty_state_has_an_empty_record() -> None:
    meta = SuperPrompt().run_metadata
    assert meta.stage == "raw" and meta.plan is None and meta.total.calls == 0

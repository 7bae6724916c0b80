"""The SuperPrompt round-trips through JSON and SQLite checkpoints; the gating rules hold."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from langgraph.graph import END, START, StateGraph

from ragstream.chunking import Chunker
from ragstream.errors import StageOrderError
from ragstream.orchestration.checkpoint import sqlite_checkpointer
from ragstream.preprocessing import preprocess
from ragstream.settings import Settings
from ragstream.state import (
    Chunk,
    ConversationTurn,
    Span,
    Stage,
    SuperPrompt,
    allowed_stages,
    check_stage_allowed,
    reached_stage,
)


@pytest.fixture()
def full_sp(settings: Settings, chunker: Chunker) -> SuperPrompt:
    sp = preprocess('{"TASK": "Explain \\"fusion\\"\\n now", "CONTEXT": {"n": 1}, "Odd": "ü"}', settings, chunker=chunker)
    chunk = Chunk(
        id="a.md:abc:0",
        source_path="docs/a.md",
        sha256="abc",
        chunk_index=0,
        text="text with ünïcode and \r\n",
        span=Span(start=0, end=24),
        metadata={"mtime": 1.5, "title": "A", "flag": True, "none": None},
        scores={"vector": 0.5},
    )
    return sp.model_copy(
        update={
            "base_context_chunks": [chunk],
            "views_by_stage": {"retrieval": [chunk.id]},
            "final_selection_ids": [chunk.id],
            "S_CTX_MD": "- fact [a.md:abc:0]",
            "extras": {**sp.extras, "nested": {"list": [1, 2.5, None, "x"]}},
            "recentConversation": [ConversationTurn(role="user", content="hi")],
        }
    )


def test_json_round_trip_is_lossless(full_sp: SuperPrompt) -> None:
    text = full_sp.model_dump_json()
    back = SuperPrompt.model_validate_json(text)
    assert back == full_sp
    assert back.model_dump_json() == text


def _echo_graph() -> StateGraph:
    graph = StateGraph(SuperPrompt)
    graph.add_node("store", lambda s: {})
    graph.add_edge(START, "store")
    graph.add_edge("store", END)
    return graph


def test_sqlite_checkpoint_round_trip_across_processes(full_sp: SuperPrompt, tmp_path: Path) -> None:
    db = tmp_path / "ck.sqlite"
    app = _echo_graph().compile(checkpointer=sqlite_checkpointer(db))
    config = {"configurable": {"thread_id": "t1"}}
    app.invoke(full_sp, config)
    expected = full_sp.model_dump_json()

    # A fresh process with a fresh connection reads the same state back.
    script = textwrap.dedent(
        f"""
        import sys
        from langgraph.graph import END, START, StateGraph
        from ragstream.orchestration.checkpoint import sqlite_checkpointer
        from ragstream.state import SuperPrompt
        g = StateGraph(SuperPrompt)
        g.add_node("store", lambda s: {{}})
        g.add_edge(START, "store"); g.add_edge("store", END)
        app = g.compile(checkpointer=sqlite_checkpointer(__import__("pathlib").Path({str(db)!r})))
        values = app.get_state({{"configurable": {{"thread_id": "t1"}}}}).values
        sys.stdout.write(SuperPrompt.model_validate(values).model_dump_json())
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout == expected
    assert "unregistered type" not in out.stderr


def _after(*stages: Stage, selection: bool = True) -> SuperPrompt:
    return SuperPrompt(
        stage=stages[-1] if stages else Stage.RAW,
        history_of_stages=list(stages),
        final_selection_ids=["c1"] if selection else [],
    )


def test_stage_order_rules() -> None:
    raw = _after()
    assert allowed_stages(raw) == [Stage.PREPROCESSED]
    with pytest.raises(StageOrderError):
        check_stage_allowed(raw, Stage.RETRIEVAL)

    pre = _after(Stage.PREPROCESSED)
    assert allowed_stages(pre) == [Stage.A2, Stage.RETRIEVAL]
    with pytest.raises(StageOrderError, match="already preprocessed"):
        check_stage_allowed(pre, Stage.PREPROCESSED)
    check_stage_allowed(pre, Stage.PREPROCESSED, restart=True)

    retrieved = _after(Stage.PREPROCESSED, Stage.RETRIEVAL)
    assert Stage.A4 not in allowed_stages(retrieved)
    assert {Stage.RERANKED, Stage.A3} <= set(allowed_stages(retrieved))

    reranked = _after(Stage.PREPROCESSED, Stage.RETRIEVAL, Stage.RERANKED)
    assert Stage.A4 in allowed_stages(reranked)
    assert Stage.A4 not in allowed_stages(_after(Stage.PREPROCESSED, Stage.RETRIEVAL, Stage.RERANKED, selection=False))
    assert Stage.BUILT not in allowed_stages(reranked)


def test_rerunning_a2_keeps_later_results_but_other_reruns_invalidate() -> None:
    built = [Stage.PREPROCESSED, Stage.A2, Stage.RETRIEVAL, Stage.RERANKED, Stage.A3, Stage.A4, Stage.A5, Stage.BUILT]
    after_a2 = _after(*built, Stage.A2)
    assert after_a2.stage is Stage.A2
    assert reached_stage(after_a2) is Stage.BUILT
    check_stage_allowed(after_a2, Stage.BUILT)

    after_retrieval = _after(*built, Stage.RETRIEVAL)
    assert reached_stage(after_retrieval) is Stage.RETRIEVAL
    with pytest.raises(StageOrderError) as info:
        check_stage_allowed(after_retrieval, Stage.BUILT)
    assert info.value.reached == "retrieval"

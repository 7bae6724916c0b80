"""The SuperPrompt round-trips through JSON and SQLite checkpoints; the gating rules hold."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.graph import END, START, StateGraph

from ragstream.errors import StageOrderError
from ragstream.orchestration.checkpoint import sqlite_checkpointer, state_serializer
from ragstream.settings import Settings
from ragstream.stages.rules import allowed_stages, check_stage_allowed, frontier_after
from ragstream.state import Chunk, ConversationTurn, Span, Stage, SuperPrompt
from ragstream.state.superprompt import SEED_NAMES
from ragstream.text.chunking import Chunker
from tests.helpers import preprocessed


@pytest.fixture()
def full_sp(settings: Settings, chunker: Chunker) -> SuperPrompt:
    sp = preprocessed('{"TASK": "Explain \\"fusion\\"\\n now", "CONTEXT": {"n": 1}, "Odd": "ü"}', settings)
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
            "s_ctx_md": "- fact [a.md:abc:0]",
            "extras": sp.extras.model_copy(update={"send": {"nested": {"list": [1, 2.5, None, "x"]}}}),
            "recent_conversation": [ConversationTurn(role="user", content="hi")],
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


def _at(stage: Stage, selection: bool = True) -> SuperPrompt:
    return SuperPrompt(stage=stage, final_selection_ids=["c1"] if selection else [])


def test_stage_order_rules() -> None:
    raw = _at(Stage.RAW)
    assert allowed_stages(raw) == [Stage.PREPROCESS]
    with pytest.raises(StageOrderError):
        check_stage_allowed(raw, Stage.RETRIEVAL)

    assert allowed_stages(_at(Stage.PREPROCESS)) == [Stage.PREPROCESS, Stage.A2, Stage.RETRIEVAL]
    retrieved = _at(Stage.RETRIEVAL)
    assert Stage.A4 not in allowed_stages(retrieved)
    assert {Stage.RERANK, Stage.A3} <= set(allowed_stages(retrieved))
    assert Stage.A4 in allowed_stages(_at(Stage.RERANK))
    assert Stage.A4 not in allowed_stages(_at(Stage.RERANK, selection=False))
    assert Stage.BUILD not in allowed_stages(_at(Stage.RERANK))
    with pytest.raises(StageOrderError) as info:
        check_stage_allowed(retrieved, Stage.BUILD)
    assert info.value.reached == "retrieval"


def test_what_a_rerun_invalidates_derives_from_reads_and_writes() -> None:
    # A2 writes labels: only A5 and the build read them, so retrieval through A4 stay valid.
    assert frontier_after(Stage.BUILD, Stage.A2) is Stage.A4
    assert frontier_after(Stage.RETRIEVAL, Stage.A2) is Stage.RETRIEVAL
    assert frontier_after(Stage.PREPROCESS, Stage.A2) is Stage.A2
    # Retrieval, the ReRanker and A3 change the selection every later selecting stage reads.
    for stage in (Stage.RETRIEVAL, Stage.RERANK, Stage.A3):
        assert frontier_after(Stage.BUILD, stage) is stage
    assert frontier_after(Stage.BUILD, Stage.PREPROCESS) is Stage.PREPROCESS
    # A4's output is read by the build, not by A5.
    assert frontier_after(Stage.BUILD, Stage.A4) is Stage.A5


def test_the_state_speaks_the_seeds_names_and_todays_names_still_load() -> None:
    assert [s.value for s in Stage] == ["raw", "preprocessed", "a2", "retrieval", "reranked", "a3", "a4", "a5", "built"]
    assert [s.node for s in Stage][1:] == ["preprocess", "a2", "retrieval", "rerank", "a3", "a4", "a5", "build"]
    assert Stage("preprocess") is Stage.PREPROCESS and Stage("build") is Stage.BUILD
    assert Stage("rerank") is Stage.RERANK and Stage("reranker") is Stage.RERANK
    sp = SuperPrompt.model_validate(
        {
            "stage": "rerank",
            "history_of_stages": ["preprocess", "retrieval", "rerank"],
            "views_by_stage": {"retrieval": ["c1", "c2"], "rerank": ["c1"]},
        }
    )
    assert sp.stage is Stage.RERANK and sp.views_by_stage == {"retrieval": ["c1", "c2"], "reranked": ["c1"]}
    data = sp.model_dump(mode="json")
    assert data["stage"] == "reranked" and data["history_of_stages"] == ["preprocessed", "retrieval", "reranked"]


# A value for each renamed field, keyed by its seed name (the alias).
ROLES = st.sampled_from(["user", "assistant"])
TURNS = st.lists(st.builds(ConversationTurn, role=ROLES, content=st.text()), max_size=3)
RENAMED_VALUES = st.fixed_dictionaries(
    {seed: TURNS if field == "recent_conversation" else st.text() for seed, field in SEED_NAMES.items()}
)


@given(values=RENAMED_VALUES, by_seed_name=st.lists(st.booleans(), min_size=5, max_size=5))
def test_a_superprompt_under_either_name_round_trips_through_the_checkpoint_serializer(
    values: dict, by_seed_name: list[bool]
) -> None:
    """Either name of a renamed field fills it (seed name: the key a caller before the rename used); the
    checkpoint serializer and JSON give it back equal, and JSON keeps the seed's keys."""
    names = zip(values, by_seed_name, strict=True)
    given_as = {(seed if use_seed else SEED_NAMES[seed]): values[seed] for seed, use_seed in names}
    sp = SuperPrompt.model_validate(given_as)
    assert {SEED_NAMES[seed]: getattr(sp, SEED_NAMES[seed]) for seed in values} == {
        SEED_NAMES[seed]: value for seed, value in values.items()
    }
    serde = state_serializer()
    assert serde.loads_typed(serde.dumps_typed(sp)) == sp
    assert SuperPrompt.model_validate(sp.model_dump(by_alias=False)) == sp
    data = sp.model_dump(mode="json")
    assert set(SEED_NAMES) <= set(data) and not set(SEED_NAMES.values()) & set(data)  # exports keep the seed keys
    assert SuperPrompt.model_validate_json(sp.model_dump_json()) == sp


def test_the_graph_channels_are_the_field_names_not_their_aliases() -> None:
    """LangGraph keys a Pydantic state's channels by field name (aliases are not read), hence the rename of
    checkpoints written under the seed's names as they load (see test_legacy_checkpoints)."""
    channels = set(StateGraph(SuperPrompt).channels)
    assert set(SEED_NAMES.values()) <= channels and not set(SEED_NAMES) & channels

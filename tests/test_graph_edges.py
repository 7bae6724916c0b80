"""The drawn graph is the stage order: each stage's edges go to the stages that may legally follow it."""

from __future__ import annotations

from langgraph.graph import END

from ragstream.orchestration.graph import build_graph
from ragstream.orchestration.review import REVIEW
from ragstream.orchestration.strict import DECIDE
from ragstream.stages import NAMES, ORDER, SKIPPABLE, rank


def _edges() -> dict[str, set[str]]:
    drawn: dict[str, set[str]] = {}
    for edge in build_graph().get_graph().edges:
        drawn.setdefault(edge.source, set()).add(edge.target)
    return drawn


def test_each_stage_goes_to_its_successor_or_past_skippable_stages_only() -> None:
    drawn = _edges()
    assert drawn["__start__"] == {"preprocess"}
    for stage in ORDER[1:]:
        targets = drawn[stage.node] - {REVIEW, END, "answer", DECIDE}
        assert all(rank(t) > rank(stage) for t in targets), (stage, targets)  # never backwards
        nxt = ORDER[rank(stage) + 1] if rank(stage) + 1 < len(ORDER) else None
        if nxt is not None:
            assert nxt.node in targets  # the successor always
        for target in targets:  # anything further only by skipping skippable stages
            between = {s.node for s in ORDER[rank(stage) + 1 : rank(target)]}
            assert between <= SKIPPABLE and not {"rerank", "a3"} <= between, (stage, target)
        assert REVIEW in drawn[stage.node] and END in drawn[stage.node]
    assert drawn["a4"] - {REVIEW, END} == {"a5", "build"}
    assert drawn["retrieval"] - {REVIEW, END} == {"rerank", "a3"}  # never straight to A4: it needs one of them
    assert drawn["build"] == {REVIEW, END, "answer"}
    assert drawn[REVIEW] == {*NAMES[1:], "answer", END}
    assert drawn["preprocess"] - {REVIEW, END} == {DECIDE, "a2", "retrieval"}  # strict mode's question
    assert drawn[DECIDE] == {"a2", "retrieval", REVIEW, END}
    assert sum(len(t) for t in drawn.values()) < 60  # not every stage to every stage


def test_the_drawing_is_mermaid_with_the_stage_order() -> None:
    mermaid = build_graph().get_graph().draw_mermaid()
    assert "preprocess -.-> a2;" in mermaid and "a4 -.-> review;" in mermaid
    assert "a2 -.-> a4;" not in mermaid and "build -.-> answer;" in mermaid

"""The drawn graph is the stage order: each stage's edges go to the stages that may legally follow it, and
every path through a review is one a run can take."""

from __future__ import annotations

from langgraph.graph import END, START

from ragstream.orchestration.apply import EDITABLE
from ragstream.orchestration.graph import build_graph
from ragstream.orchestration.review import review_name
from ragstream.orchestration.strict import DECIDE
from ragstream.stages import SKIPPABLE, Stage
from ragstream.stages.rules import ORDER, rank, spec_of

STAGES = {stage.node: stage for stage in ORDER[1:]}
REVIEWS = {review_name(stage): stage for stage in ORDER[1:]}


def _edges() -> dict[str, set[str]]:
    drawn: dict[str, set[str]] = {}
    for edge in build_graph().get_graph().edges:
        drawn.setdefault(edge.source, set()).add(edge.target)
    return drawn


def _follows(stage: Stage, target: str) -> bool:
    """`target` may follow `stage` in a run: later, past skippable stages only, never both A3 and the ReRanker."""
    if target not in STAGES or rank(STAGES[target]) <= rank(stage):
        return False
    between = {s.node for s in ORDER[rank(stage) + 1 : rank(STAGES[target])]}
    return between <= SKIPPABLE and not {"rerank", "a3"} <= between


def _reopened_by_an_edit(stage: Stage, target: str) -> bool:
    """An edit at the review after `stage` re-records a field some earlier stage wrote; `target` runs again
    when it reads that field, comes after that writer, and is not past `stage` (which had already run)."""
    if target not in STAGES or rank(STAGES[target]) > rank(stage):
        return False
    reads = spec_of(STAGES[target]).reads
    return any(
        facet in reads and any(facet in spec_of(w).writes for w in ORDER[1 : rank(STAGES[target])])
        for facet in set(EDITABLE.values())
    )


def test_every_drawn_edge_is_in_the_legal_order() -> None:
    drawn = _edges()
    assert drawn[START] == {"preprocess"}
    for source, targets in drawn.items():
        for target in targets - {END}:
            if source in STAGES:
                stage = STAGES[source]
                assert (
                    _follows(stage, target)
                    or target == review_name(stage)
                    or (stage is Stage.BUILD and target == "answer")
                    or (stage is Stage.PREPROCESS and target == DECIDE)
                ), (source, target)
            elif source == DECIDE:  # strict mode's question is answered right after PreProcessing
                assert _follows(Stage.PREPROCESS, target) or target == review_name(Stage.PREPROCESS), target
            elif source in REVIEWS:
                stage = REVIEWS[source]
                assert (
                    _follows(stage, target)
                    or _reopened_by_an_edit(stage, target)
                    or (stage is Stage.BUILD and target == "answer")
                ), (source, target)
            else:
                assert (source, target) in {(START, "preprocess"), ("answer", "critic"), ("critic", "answer")}


def test_each_review_follows_its_own_stage_only() -> None:
    drawn = _edges()
    for review, stage in REVIEWS.items():
        into = {source for source, targets in drawn.items() if review in targets}
        assert into == ({stage.node, DECIDE} if stage is Stage.PREPROCESS else {stage.node}), (review, into)


def test_the_paths_a_run_cannot_take_are_not_drawn() -> None:
    drawn = _edges()
    after_a2 = {t for r in drawn["a2"] if r in REVIEWS for t in drawn[r]}
    assert "a2" not in after_a2  # a2 -> review -> a2
    after_retrieval = {t for r in drawn["retrieval"] if r in REVIEWS for t in drawn[r]}
    assert after_retrieval - {END} == {"rerank", "a3"}  # never retrieval -> review -> a2 (or straight to A4)
    assert drawn["review"] == {"a5", "build", END}  # the default review after A4 goes on to A5 or the build
    assert drawn["review_build"] == {"a5", "build", "answer", END}  # a label edit re-runs A5, the condensed the build
    assert drawn["a4"] == {"a5", "build", "review", END}
    assert drawn["retrieval"] - {END} == {"rerank", "a3", "review_retrieval"}
    assert drawn["build"] == {"review_build", END, "answer"}
    assert drawn["preprocess"] - {END} == {DECIDE, "a2", "retrieval", "review_preprocess"}


def test_the_drawing_is_mermaid_with_the_stage_order() -> None:
    mermaid = build_graph().get_graph().draw_mermaid()
    assert "preprocess -.-> a2;" in mermaid and "a4 -.-> review;" in mermaid
    assert "a2 -.-> a4;" not in mermaid and "build -.-> answer;" in mermaid

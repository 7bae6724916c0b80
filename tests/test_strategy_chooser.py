"""The strategy chooser against a table of labelled prompts, tricky words included."""

from __future__ import annotations

from typing import get_args

import pytest

from ragstream.retrieval.strategy import choose_strategy, years_in
from ragstream.strategies import Strategy, StrategyName

T, E, H = Strategy.TEMPORAL, Strategy.EXPLORATORY, Strategy.HYBRID
TABLE = [
    # times
    ("what changed since 2024-01-01", T),
    ("Which decisions were made in 2023 about checkpoints?", T),
    ("Summarize the incidents before 2020", T),
    ("What did we change since last week?", T),
    ("List the fixes since March", T),
    ("Which APIs broke since v2?", T),
    ("latest decisions on checkpoints", T),
    ("What is the most recent guidance on chunk sizes?", T),
    ("Show me what's new in the retrieval module", T),
    ("What has changed in the ingestion code?", T),
    ("Which tickets were closed this week?", T),
    ("Errors logged in the past 30 days", T),
    ("Notes from the 2024-03-18 planning meeting", T),
    ("How did the design evolve after 2021?", T),
    ("What was decided yesterday about the reranker?", T),
    # exploration
    ("give me an overview of the storage layer", E),
    ("Explore the ingestion pipeline and its failure modes", E),
    ("Tell me everything about the Prompt Builder", E),
    ("How do the reranker and the NLI gate relate?", E),
    ("What are the connections between memory and retrieval?", E),
    ("I need the big picture of how the pieces fit", E),
    ("Draw a map of the modules", E),
    # the default, including words that only look like a time or exploration
    ("Why is the index immutable, since readers may hold an old generation?", H),
    ("Since BM25 ignores word order, how do we handle phrases?", H),
    ("What does the changelog say about fencing?", H),
    ("Summarize the related work section of the paper", H),
    ("how does BM25 work with 2048 tokens", H),
    ("Explain reciprocal-rank fusion", H),
    ("Which file defines the token budget?", H),
    ("Write a function that validates project names", H),
    ("What is the last step of the pipeline?", H),
    ("Is the manifest written before or after the snapshot?", H),
    ("Which errors does the retrieval controller raise?", H),
]


@pytest.mark.parametrize(("query", "expected"), TABLE)
def test_chooser_table(query: str, expected: Strategy) -> None:
    strategy, reason = choose_strategy(query)
    assert strategy is expected, reason
    assert reason


def test_table_is_large_and_covers_every_outcome() -> None:
    assert len(TABLE) >= 30 and {s for _, s in TABLE} == {T, E, H}


def test_years_are_only_those_named_as_times() -> None:
    assert years_in("what changed since 2024-01-01 and in 2023") == {2024, 2023}
    assert years_in("how does BM25 work with 2048 tokens") == set()


def test_the_strategy_name_type_lists_exactly_the_strategies() -> None:
    assert get_args(StrategyName) == tuple(Strategy.__members__)

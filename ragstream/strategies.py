"""The retrieval strategies' names: what a user, a config, a plan or a checkpoint may call a strategy.

Below the state and the settings, which validate with it; the chooser is retrieval/strategy.py.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class Strategy(StrEnum):
    """Named for what each searches with; the seed's names still parse (`_missing_`, `SEED_NAMES`)."""

    DENSE = "DENSE"  # dense vectors only
    KEYWORD = "KEYWORD"  # BM25 only
    HYBRID = "HYBRID"  # both, fused
    TEMPORAL = "TEMPORAL"  # hybrid, re-ranked by recency / filtered by dates named in the query
    EXPLORATORY = "EXPLORATORY"  # hybrid seeds expanded along neighbouring chunks and linked files

    @classmethod
    def _missing_(cls, value: object) -> Strategy | None:
        return cls.__members__.get(strategy_name(value)) if isinstance(value, str) else None


# The members' names as a type, for the run options' JSON schema (tests/test_strategy_chooser.py checks they agree).
StrategyName = Literal["DENSE", "KEYWORD", "HYBRID", "TEMPORAL", "EXPLORATORY"]

# The seed's names, which read backwards (SEMANTIC was BM25, PRECISE was dense vectors). They keep their
# meaning wherever one arrives: the CLI, run options, config, and the reports of old checkpoints.
SEED_NAMES = {"SEMANTIC": Strategy.KEYWORD.value, "PRECISE": Strategy.DENSE.value}


def strategy_name(name: str) -> str:
    """The current name for a strategy named the seed's way; any other text (a current name, "NONE")
    unchanged, so a validator can put it in front of a field that also holds non-strategies."""
    return SEED_NAMES.get(name, name)

"""The stages in their legal order, as the SuperPrompt names them.

`SuperPrompt.stage` is the frontier: the furthest stage whose output is still valid. The values are the
seed's names ("raw" before anything ran, past tense where the seed says so); a member's `node` is the
stage's one short name (the graph node, the CLI choice, the extras field). Those short names, and an
earlier spelling, still read as the member, so checkpoints written by earlier versions load.
What each stage reads, writes and needs lives in the registry (`ragstream.stages`).
"""

from __future__ import annotations

from enum import Enum


# Not a StrEnum: that prints and formats members differently, and messages and checkpoints rely on today's forms.
class Stage(str, Enum):  # noqa: UP042
    """Pipeline stages in their legal order; the value is the state's name, `node` the stage's short name."""

    RAW = "raw"
    PREPROCESS = "preprocessed"
    A2 = "a2"
    RETRIEVAL = "retrieval"
    RERANK = "reranked"
    A3 = "a3"
    A4 = "a4"
    A5 = "a5"
    BUILD = "built"

    @property
    def node(self) -> str:
        return self.name.lower()

    @classmethod
    def _missing_(cls, value: object) -> Stage | None:
        if isinstance(value, str) and value in LEGACY_NAMES:
            return cls(LEGACY_NAMES[value])
        return None


# The short names whose state name differs (the seed's past tenses), and every other name checkpoints and
# callers used, each to the state's name.
SEED_NAMES = {"preprocess": "preprocessed", "rerank": "reranked", "build": "built"}
LEGACY_NAMES = {**SEED_NAMES, "reranker": "reranked"}

ORDER: tuple[Stage, ...] = tuple(Stage)
NAMES: tuple[str, ...] = tuple(stage.node for stage in ORDER[1:])

# The stages that write a view of the chunk selection (the keys of `views_by_stage`, state names).
SELECTING: tuple[str, ...] = (Stage.RETRIEVAL.value, Stage.RERANK.value, Stage.A3.value, Stage.A4.value)


def rank(stage: Stage | str) -> int:
    return ORDER.index(Stage(stage))

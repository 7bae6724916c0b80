"""The SuperPrompt: the single state every stage reads and the graph checkpoints."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from ragstream.state.extras import Extras
from ragstream.state.parts import Chunk, ConversationTurn, Preprocessing, PromptBody
from ragstream.state.reports import Answer, RunMetadata
from ragstream.state.stage import LEGACY_NAMES, SELECTING, Stage, rank


class SuperPrompt(BaseModel):
    """The single state that flows through all eight stages and every checkpointer.

    `stage` is the furthest stage whose output is valid; `history_of_stages` lists what ran.
    """

    stage: Stage = Stage.RAW
    history_of_stages: list[Stage] = Field(default_factory=list)
    raw_prompt: str = ""
    body: PromptBody = Field(default_factory=PromptBody)
    extras: Extras = Field(default_factory=Extras)
    preprocessing: Preprocessing | None = None
    base_context_chunks: list[Chunk] = Field(default_factory=list)
    views_by_stage: dict[str, list[str]] = Field(default_factory=dict)
    final_selection_ids: list[str] = Field(default_factory=list)
    S_CTX_MD: str = ""
    System_MD: str = ""
    Prompt_MD: str = ""
    Attachments_MD: str = ""
    prompt_ready: str = ""
    recentConversation: list[ConversationTurn] = Field(default_factory=list)
    answer: Answer | None = None  # what the model answered to prompt_ready, when the run was asked to send
    run_metadata: RunMetadata = Field(default_factory=RunMetadata)

    @model_validator(mode="before")
    @classmethod
    def _legacy_views(cls, data: Any) -> Any:
        """Views keyed by another name of their stage ('rerank', as an earlier version wrote) move to the state's
        name."""
        if isinstance(data, dict) and isinstance(data.get("views_by_stage"), dict):
            views = data["views_by_stage"]
            if any(k in LEGACY_NAMES for k in views):
                data = {**data, "views_by_stage": {LEGACY_NAMES.get(k, k): v for k, v in views.items()}}
        return data

    def chunk_by_id(self) -> dict[str, Chunk]:
        return {c.id: c for c in self.base_context_chunks}

    def current_view(self) -> tuple[str, list[str]] | None:
        """The selection of the latest valid selecting stage, with that stage's name."""
        for name in reversed(SELECTING):
            if name in self.views_by_stage and rank(name) <= rank(self.stage):
                return name, self.views_by_stage[name]
        return None

    def selection_before(self, stage: Stage) -> list[str]:
        """The selection a selecting stage starts from: the latest valid view of a stage before it."""
        for name in reversed(SELECTING):
            if rank(name) < rank(stage) and rank(name) <= rank(self.stage) and name in self.views_by_stage:
                return list(self.views_by_stage[name])
        return []

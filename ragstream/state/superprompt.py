"""The SuperPrompt: the single state every stage reads and the graph checkpoints."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragstream.state.extras import Extras
from ragstream.state.parts import Chunk, ConversationTurn, Preprocessing, PromptBody
from ragstream.state.reports import Answer, RunMetadata
from ragstream.state.stage import LEGACY_NAMES, SELECTING, Stage, rank


class SuperPrompt(BaseModel):
    """The single state that flows through all eight stages and every checkpointer.

    `stage` is the furthest stage whose output is valid; `history_of_stages` lists what ran.

    Five fields keep the seed's names (`S_CTX_MD`, `System_MD`, `Prompt_MD`, `Attachments_MD`,
    `recentConversation`) as aliases: they are read under either name and written under the seed's, so every
    JSON a user sees keeps its keys. The graph's channels are the field names; checkpoints written under the
    seed's names are renamed as they load (`orchestration.checkpoint`).
    """

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    stage: Stage = Stage.RAW
    history_of_stages: list[Stage] = Field(default_factory=list)
    raw_prompt: str = ""
    body: PromptBody = Field(default_factory=PromptBody)
    extras: Extras = Field(default_factory=Extras)
    preprocessing: Preprocessing | None = None
    base_context_chunks: list[Chunk] = Field(default_factory=list)
    views_by_stage: dict[str, list[str]] = Field(default_factory=dict)
    final_selection_ids: list[str] = Field(default_factory=list)
    s_ctx_md: str = Field("", alias="S_CTX_MD")
    system_md: str = Field("", alias="System_MD")
    prompt_md: str = Field("", alias="Prompt_MD")
    attachments_md: str = Field("", alias="Attachments_MD")
    prompt_ready: str = ""
    recent_conversation: list[ConversationTurn] = Field(default_factory=list, alias="recentConversation")
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


# The seed's name of each renamed field: what checkpoints written before the rename key their channels by.
SEED_NAMES: dict[str, str] = {
    info.alias: name for name, info in SuperPrompt.model_fields.items() if info.alias and info.alias != name
}

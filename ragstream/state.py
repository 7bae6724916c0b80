"""The typed SuperPrompt state, its parts, and the legal stage order.

The stage order and the gating rules live here, once: the controller, the graph, the CLI and the GUI
all ask `check_stage_allowed` / `allowed_stages` instead of keeping their own copies.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragstream.errors import StageOrderError


class Stage(str, Enum):
    """Pipeline stages in their legal order."""

    RAW = "raw"
    PREPROCESSED = "preprocessed"
    A2 = "a2"
    RETRIEVAL = "retrieval"
    RERANKED = "reranked"
    A3 = "a3"
    A4 = "a4"
    A5 = "a5"
    BUILT = "built"

    @property
    def rank(self) -> int:
        return STAGE_ORDER.index(self)


STAGE_ORDER: tuple[Stage, ...] = tuple(Stage)


class Span(BaseModel):
    """Half-open character range [start, end) in a named text (the prompt or a document)."""

    model_config = ConfigDict(frozen=True)

    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Span:
        if self.end < self.start:
            raise ValueError(f"span end {self.end} is before start {self.start}")
        return self

    def slice(self, text: str) -> str:
        return text[self.start : self.end]

    def shifted(self, offset: int) -> Span:
        return Span(start=self.start + offset, end=self.end + offset)


PromptFormat = Literal["plain", "markdown", "json"]
Role = Literal["META", "CONTENT", "UNKNOWN"]
SegmentNote = Literal["KEPT_CONTENT", "DROPPED_META", "DROPPED_EMPTY", "UNDECIDED", "KEPT_UNDECIDED"]


class Header(BaseModel):
    """Task 1 output: one top-level header (or label) and its body, with exact spans.

    `body == prompt[body_span]` always holds; `value` carries the decoded JSON string when the
    raw slice contains escapes, so the body fields read naturally while spans stay exact.
    """

    name: str | None
    level: int = 0
    header_span: Span | None = None
    body: str
    body_span: Span
    value: str | None = None


class CanonEntry(BaseModel):
    """Task 2 output for one section: how its header was mapped and which role it plays."""

    section_index: int
    original_header: str | None
    normalized: str
    canon: str | None
    role: Role
    mapped_by: Literal["alias", "agent00", "preamble", "plain_text", "none"]
    body_span: Span


class Segment(BaseModel):
    """Task 3 output: one row of the segment table."""

    id: str
    canon_type: str
    original_header: str | None
    text: str
    weight: float = 1.0
    span: Span
    line_start: int
    line_end: int
    kept_for_retrieval: bool
    source_note: SegmentNote


class QueryPiece(BaseModel):
    """Task 4 output: a retrieval-ready piece of a kept segment, chunked like ingestion."""

    piece_id: str
    parent_text_id: str
    canon_type: str
    text_piece: str
    weight: float = 1.0
    parent_span: Span
    piece_span: Span
    retrieval_filters: dict[str, Any] = Field(default_factory=dict)
    kept_for_retrieval: bool = True

    @property
    def prompt_span(self) -> Span:
        """Where the piece lies in the original prompt."""
        return self.piece_span.shifted(self.parent_span.start)


class Preprocessing(BaseModel):
    """Everything Tasks 1-4 produced, kept typed for inspection and traceability."""

    format: PromptFormat
    format_note: str | None = None
    headers: list[Header] = Field(default_factory=list)
    canon_entries: list[CanonEntry] = Field(default_factory=list)
    task_rule: Literal[
        "TASK_PRESENT", "FROM_USER_PROMPT", "FROM_FIRST_CONTENT", "PLAIN_TEXT", "NO_CONTENT"
    ]
    segments: list[Segment] = Field(default_factory=list)
    pieces: list[QueryPiece] = Field(default_factory=list)
    include_undecided: bool = False

    @property
    def canon_map(self) -> dict[str, str]:
        """original header name -> canon name or UNKNOWN (the spec's canonicalized header map)."""
        return {
            e.original_header: e.canon or "UNKNOWN"
            for e in self.canon_entries
            if e.original_header is not None
        }


class PromptBody(BaseModel):
    """Canonical prompt fields. Content fields come from PreProcessing; labels from A2."""

    system: str | None = None
    task: str | None = None
    context: str | None = None
    purpose: str | None = None
    user_prompt: str | None = None
    audience: str | None = None
    format: str | None = None
    depth: str | None = None
    tone: str | None = None
    confidence: str | None = None


class Chunk(BaseModel):
    """A document excerpt, traceable to its file (path + sha256) and character span."""

    id: str
    source_path: str
    sha256: str
    chunk_index: int = Field(ge=0)
    text: str
    span: Span
    metadata: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    scores: dict[str, float] = Field(default_factory=dict)


class ConversationTurn(BaseModel):
    role: Literal["user", "assistant", "summary", "note"]
    content: str


class SuperPrompt(BaseModel):
    """The single state that flows through all eight stages and every checkpointer."""

    stage: Stage = Stage.RAW
    history_of_stages: list[Stage] = Field(default_factory=list)
    raw_prompt: str = ""
    body: PromptBody = Field(default_factory=PromptBody)
    extras: dict[str, Any] = Field(default_factory=dict)
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

    def chunk_by_id(self) -> dict[str, Chunk]:
        return {c.id: c for c in self.base_context_chunks}


class _Rule(BaseModel):
    min_reached: Stage
    needs_selection_below: Stage | None = None
    why: str


# Minimum stage the run must have reached before each stage may run (controller spec §5).
# A4 may follow the ReRanker directly when a selection exists; otherwise it needs A3.
STAGE_RULES: dict[Stage, _Rule] = {
    Stage.PREPROCESSED: _Rule(min_reached=Stage.RAW, why="PreProcessing runs on a fresh prompt"),
    Stage.A2: _Rule(min_reached=Stage.PREPROCESSED, why="A2 needs a preprocessed prompt"),
    Stage.RETRIEVAL: _Rule(min_reached=Stage.PREPROCESSED, why="retrieval needs query pieces"),
    Stage.RERANKED: _Rule(min_reached=Stage.RETRIEVAL, why="the ReRanker needs retrieved chunks"),
    Stage.A3: _Rule(min_reached=Stage.RETRIEVAL, why="the NLI gate needs retrieved chunks"),
    Stage.A4: _Rule(
        min_reached=Stage.RERANKED,
        needs_selection_below=Stage.A3,
        why="the Condenser needs A3, or the ReRanker with a non-empty selection",
    ),
    Stage.A5: _Rule(min_reached=Stage.A4, why="the Format Enforcer runs after the Condenser"),
    Stage.BUILT: _Rule(min_reached=Stage.A4, why="the Prompt Builder needs the condensed context"),
}


def reached_stage(sp: SuperPrompt) -> Stage:
    """The furthest stage whose outputs are still valid.

    Re-running a stage invalidates everything after it, except A2, which only relabels the body
    and so keeps later results (controller spec §5.2).
    """
    reached = Stage.RAW
    for stage in sp.history_of_stages:
        if stage is Stage.PREPROCESSED:
            reached = Stage.PREPROCESSED
        elif stage is Stage.A2:
            reached = max(reached, Stage.A2, key=lambda s: s.rank)
        else:
            reached = stage
    return reached


def stage_blocker(sp: SuperPrompt, target: Stage, restart: bool = False) -> str | None:
    """Why `target` may not run now, or None when it may."""
    if target is Stage.RAW:
        return "'raw' is the starting state, not a stage to run"
    reached = reached_stage(sp)
    rule = STAGE_RULES[target]
    if target is Stage.PREPROCESSED:
        return None if restart or reached is Stage.RAW else "the prompt is already preprocessed; restart to preprocess again"
    if reached.rank < rule.min_reached.rank:
        return rule.why
    if (
        rule.needs_selection_below is not None
        and reached.rank < rule.needs_selection_below.rank
        and not sp.final_selection_ids
    ):
        return rule.why
    return None


def check_stage_allowed(sp: SuperPrompt, target: Stage, restart: bool = False) -> None:
    """Raise StageOrderError when `target` may not run on `sp`."""
    blocker = stage_blocker(sp, target, restart)
    if blocker is not None:
        raise StageOrderError(target.value, reached_stage(sp).value, blocker)


def allowed_stages(sp: SuperPrompt) -> list[Stage]:
    """Stages that may run next, in pipeline order (for enabling buttons)."""
    return [s for s in STAGE_ORDER[1:] if stage_blocker(sp, s) is None]


def advance(sp: SuperPrompt, stage: Stage) -> dict[str, Any]:
    """The stage/history fields every stage returns with its own outputs."""
    return {"stage": stage, "history_of_stages": [*sp.history_of_stages, stage]}

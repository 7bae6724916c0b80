"""The parts of the SuperPrompt: spans, the prompt's sections and pieces, its canonical body, chunks, turns."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


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
MappedBy = Literal["alias", "agent00", "person", "preamble", "plain_text", "task_fallback", "user_role", "none"]
TaskRule = Literal[
    "TASK_PRESENT",
    "FROM_USER_PROMPT",
    "FROM_ASKING_SECTION",
    "FROM_FIRST_CONTENT",
    "FROM_FIRST_SECTION",
    "PLAIN_TEXT",
    "NO_CONTENT",
]
SegmentNote = Literal[
    "KEPT_CONTENT",
    "DROPPED_META",
    "DROPPED_EMPTY",
    "UNDECIDED",
    "KEPT_UNDECIDED",
    "KEPT_BY_PERSON",
    "DROPPED_BY_PERSON",
]


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
    mapped_by: MappedBy
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
    task_rule: TaskRule
    segments: list[Segment] = Field(default_factory=list)
    pieces: list[QueryPiece] = Field(default_factory=list)
    include_undecided: bool = False

    @property
    def canon_map(self) -> dict[str, str]:
        """original header name -> canon name or UNKNOWN (the spec's canonicalized header map)."""
        return {e.original_header: e.canon or "UNKNOWN" for e in self.canon_entries if e.original_header is not None}


class PromptBody(BaseModel):
    """Canonical prompt fields. Content fields come from PreProcessing; labels from A2."""

    system: str | None = None
    task: str | None = None
    context: str | None = None
    purpose: str | None = None
    constraints: str | None = None  # what the user says must hold (Constraints, Requirements, Rules, ...)
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

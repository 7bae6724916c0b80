"""The typed SuperPrompt state, its parts, and the typed reports each stage records in `extras`.

The stage list and its rules live in `ragstream.stages`; `Stage` is re-exported here because
checkpoints written by earlier versions name it as `ragstream.state.Stage`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, create_model, model_validator

from ragstream.retrieval.strategy import strategy_name
from ragstream.stages import LEGACY_NAMES, REGISTRY, SELECTING, Stage, rank

__all__ = ["Stage"]


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


# A strategy's name as a report records it (or "NONE"); a checkpoint written with the seed's names reads
# them in today's (an old SEMANTIC is KEYWORD, BM25).
StrategyText = Annotated[str, BeforeValidator(strategy_name)]
PromptFormat = Literal["plain", "markdown", "json"]
Role = Literal["META", "CONTENT", "UNKNOWN"]
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
    mapped_by: Literal["alias", "agent00", "person", "preamble", "plain_text", "task_fallback", "user_role", "none"]
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
        "TASK_PRESENT",
        "FROM_USER_PROMPT",
        "FROM_ASKING_SECTION",
        "FROM_FIRST_CONTENT",
        "FROM_FIRST_SECTION",
        "PLAIN_TEXT",
        "NO_CONTENT",
    ]
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


# -- typed stage reports: what each stage records in `extras` ------------------------------------


class Report(BaseModel):
    """Base of the stage reports; a report describes how its stage decided, never the outputs twice."""

    model_config = ConfigDict(extra="forbid")


class Usage(Report):
    input_tokens: int = 0
    output_tokens: int = 0


class BudgetReport(Report):
    ceiling: int
    used: int
    kept: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    method: str = ""


class LLMOutcomes(Report):
    """How a stage's model calls went: valid the first time, repaired (mended or re-asked once), or
    fell back to the offline behaviour for that call; `notes` say what was mended and why it fell back."""

    valid: int = 0
    repaired: int = 0
    fell_back: int = 0
    notes: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, calls: list[Any]) -> LLMOutcomes:
        """Tally `AgentCall`s (anything with `outcome` and `notes`)."""
        counts = {"valid": 0, "repaired": 0, "fell_back": 0}
        notes: list[str] = []
        for call in calls:
            counts[call.outcome] += 1
            notes.extend(call.notes)
        return cls(**counts, notes=notes)


class RetrievalAttempt(Report):
    """One strategy retrieval tried, and the calibrated confidence of its result set."""

    strategy: StrategyText
    confidence: float


class Plan(Report):
    """What the run decided to do with the prompt before retrieving: its intent and the retrieval plan.

    Decided once per run, where retrieval starts (so a plan is valid exactly as long as what it chose).
    `source` says who decided: `rules` (offline, `evidence` names the words), `llm` (the PLAN agent's
    reason), or `user` (an explicit strategy, which always wins).
    """

    intent: Literal["factual", "research", "conversational", "transform"]
    confidence: float = Field(ge=0.0, le=1.0)
    reason: str
    evidence: list[str] = Field(default_factory=list)
    source: Literal["rules", "llm", "user"]
    retrieve: bool
    strategy: StrategyText | None = None  # None: chosen by the retrieval strategy rules
    candidates: int = 0
    budget: int = 0  # token ceiling of the prompt's excerpts
    escalated: str = ""  # why a low-confidence decision was widened, empty when it was not


class StageUsage(Report):
    """LLM calls a stage made, with their tokens and estimated cost (USD, from the price table)."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0

    def plus(self, other: StageUsage) -> StageUsage:
        return StageUsage(
            calls=self.calls + other.calls,
            tokens_in=self.tokens_in + other.tokens_in,
            tokens_out=self.tokens_out + other.tokens_out,
            cost_usd=round(self.cost_usd + other.cost_usd, 8),
        )


class SectionBudget(Report):
    ceiling: int
    used: int
    dropped: int = 0


class RetrievalMode(Report):
    strategy: StrategyText
    rung: str
    candidates: int
    confidence: float | None = None  # the kept result's calibrated confidence
    attempts: list[str] = Field(default_factory=list)  # strategies tried, the first one first (the confidence loop)
    failure: str = ""


class SummarySelection(Report):
    """Which memory items the prompt carries and which it left out, with why (see memory/conversation.py)."""

    turns_kept: int = 0
    turns_dropped: int = 0
    snippets_kept: int = 0
    snippets_dropped: int = 0
    notes_kept: int = 0
    notes_dropped: int = 0
    echoes_stripped: int = 0  # assistant sentences left out because the memory already said them
    dropped: dict[str, str] = Field(default_factory=dict)  # item -> why it was left out
    budget_ceiling: int = 0
    budget_used: int = 0


class CriticSummary(Report):
    attempts: int
    accepted: bool
    retries: int
    verdicts: list[dict[str, str]] = Field(default_factory=list)


class RunMetadata(Report):
    """One typed record of what a run decided and spent: the contract clients read (README, "Run metadata").

    Derived from the valid stage reports each time the state settles, so it never describes a stage
    output that is no longer valid; `usage` holds, per stage that is still valid, the LLM calls it made.
    """

    schema_version: Literal[1] = 1
    trace_id: str = ""
    project: str | None = None
    stage: str = "raw"
    route: str | None = None  # the intent the plan routed the prompt by
    plan: Plan | None = None
    retrieval: RetrievalMode | None = None
    context_budget: dict[str, SectionBudget] = Field(default_factory=dict)
    summary_selection: SummarySelection | None = None
    critic: CriticSummary | None = None
    usage: dict[str, StageUsage] = Field(default_factory=dict)
    total: StageUsage = Field(default_factory=StageUsage)


class PreprocessReport(Report):
    format: PromptFormat
    format_note: str | None = None
    task_rule: str
    must_headers: dict[str, str] = Field(default_factory=dict)
    normalized_map: dict[str, str] = Field(default_factory=dict)
    # The seed's name; checkpoints written before it say unknown_headers and still read.
    unknown_attributes: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("unknown_attributes", "unknown_headers")
    )
    decisions: dict[str, str] = Field(default_factory=dict)  # header -> canon, "keep" or "drop", as a person decided
    source_spans: dict[str, list[tuple[int, int]]] = Field(default_factory=dict)
    memory_turns: int = 0
    secrets_redacted: list[dict[str, str | int]] = Field(default_factory=list)  # in the prompt: type and line only
    memory: SummarySelection | None = None


class A2Report(Report):
    agent: str
    provider: str
    model: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    decisions: dict[str, str] = Field(default_factory=dict)
    reasons: dict[str, str] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    llm: LLMOutcomes | None = None


class RetrievalReport(Report):
    """`strategy` is the strategy whose result was kept; `confidence` is that result's calibrated
    probability of holding a relevant chunk among its first results (retrieval/confidence.py), from
    `confidence_evidence`; `attempts` lists every strategy tried, the first one first (a low first
    confidence re-runs retrieval with other strategies and keeps the most confident)."""

    project: str
    strategy: StrategyText
    strategy_reason: str = ""
    rung: str
    generation: int = 0
    pieces: int = 0
    timings_ms: dict[str, float] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    failures: dict[str, str] = Field(default_factory=dict)
    history_chunks: int = 0
    confidence: float | None = None
    confidence_evidence: dict[str, float] = Field(default_factory=dict)
    attempts: list[RetrievalAttempt] = Field(default_factory=list)
    plan: Plan | None = None
    failure: str = ""  # why retrieval failed when the failure policy let the run continue without excerpts
    tools: dict[str, int] = Field(default_factory=dict)  # with several tools: each one's results before fusion

    @property
    def rerun(self) -> bool:
        return len(self.attempts) > 1


class RerankReport(Report):
    kind: str
    reranked: int
    top_n: int


class ChunkDecision(Report):
    decision: str
    reason: str


class A3Report(Report):
    agent: str
    provider: str = ""
    decisions: dict[str, ChunkDecision] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    # Parts of the ask no kept chunk covers (offline evidence), in the user's words: a sentence of the
    # ask, or a word no document contains. Empty when everything is covered or when it cannot be judged.
    uncovered: list[str] = Field(default_factory=list)
    llm: LLMOutcomes | None = None
    overruled: str = ""  # the stated rule that resolved a disagreement between the model and the offline evidence


class LineEvidence(Report):
    """Why a condensed line is there (offline extraction): its chunk, its relevance to the ask, the cue that filed
    it."""

    section: str
    chunk: str
    relevance: float
    cue: str = ""


class A4Report(Report):
    agent: str
    provider: str = ""
    budget: BudgetReport | None = None
    dropped_for_budget: list[str] = Field(default_factory=list)
    unsupported_lines: list[str] = Field(default_factory=list)
    withheld_lines: list[str] = Field(default_factory=list)
    lines: list[LineEvidence] = Field(default_factory=list)
    uncovered: list[str] = Field(default_factory=list)  # parts of the ask the selection does not cover (Open issues)
    llm: LLMOutcomes | None = None


class A5Report(Report):
    """The format spec A5 derived: what the Prompt Builder renders as the output format."""

    kind: str
    sections: list[str] = Field(default_factory=list)
    requested: str = ""
    example_shape: str = ""
    rules: list[str] = Field(default_factory=list)
    source: str = ""
    llm: LLMOutcomes | None = None


class ExcerptRecord(Report):
    """One excerpt of the final prompt: its document, the chunks it holds (in file order), its span and
    lines in the indexed text, how it was hydrated (orchestration/excerpts.py), and its text (read back
    from the document at build time, so exports show exactly what the prompt shows)."""

    source: str
    chunks: list[str]
    start: int
    end: int
    lines: list[int] | None = None
    hydrated: str
    text: str


class BuildReport(Report):
    budget: BudgetReport | None = None
    excerpts: list[ExcerptRecord] = Field(default_factory=list)


class EditRecord(Report):
    stage: str
    fields: list[str]
    withdrawn_lines: list[str] = Field(default_factory=list)


class CriticRetrieval(Report):
    """Retrieval triggered by a rejection for missing information: the critic's `missing` as the query,
    the kept strategy and its confidence, the new candidates, A3's decisions on them, and the excerpts
    of those it kept, which the regeneration's request holds."""

    query: str
    strategy: StrategyText = ""
    confidence: float | None = None
    candidates: list[str] = Field(default_factory=list)
    decisions: dict[str, str] = Field(default_factory=dict)
    kept: list[str] = Field(default_factory=list)
    excerpts_md: str = ""
    failure: str = ""


class AnswerAttempt(Report):
    text: str
    model: str = ""
    critique: dict[str, str] = Field(default_factory=dict)
    accepted: bool | None = None  # None until the critic has judged it
    retrieval: CriticRetrieval | None = None  # what its critique made retrieval find for the next attempt


class Answer(Report):
    """The model's answer to the built prompt, every attempt with its critique (the critic loop)."""

    attempts: list[AnswerAttempt] = Field(default_factory=list)
    done: bool = False  # accepted, or out of regenerations (`send.critic_max_retries`)
    usage: Usage = Field(default_factory=Usage)
    prompt_tokens: int = 0

    @property
    def text(self) -> str:
        return self.attempts[-1].text if self.attempts else ""

    @property
    def accepted(self) -> bool:
        return bool(self.attempts) and self.attempts[-1].accepted is True

    @property
    def retries(self) -> int:
        return max(len(self.attempts) - 1, 0)


class RunRecords(BaseModel):
    """What `extras` holds besides the stage reports: the run's project and a person's edits."""

    model_config = ConfigDict(extra="forbid")

    project: str | None = None
    edits: list[EditRecord] = Field(default_factory=list)

    def edited_fields(self) -> set[str]:
        """Fields a person edited since the last PreProcessing."""
        return {name for record in self.edits for name in record.fields}

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        """Checkpoints of version 0.1 held an untyped dict with other key names: map them."""
        if not isinstance(data, dict) or not ({"decisions", "reranker", "format_enforcer", "builder"} & set(data)):
            return data
        old = dict(data)
        decisions = old.get("decisions", {})
        new: dict[str, Any] = {"project": old.get("project"), "edits": old.get("edits", [])}
        if decisions:
            new["preprocess"] = {
                "format": decisions.get("format", "plain"),
                "format_note": decisions.get("format_note"),
                "task_rule": decisions.get("task_rule", ""),
                "must_headers": decisions.get("must_headers", {}),
                "normalized_map": old.get("normalized_map", {}),
                "unknown_attributes": old.get("unknown_headers", []),
                "source_spans": old.get("source_spans", {}),
            }
        renamed = {
            "a2": "a2",
            "retrieval": "retrieval",
            "reranker": "rerank",
            "a3": "a3",
            "a4": "a4",
            "format_enforcer": "a5",
            "builder": "build",
        }
        for key, target in renamed.items():
            if isinstance(old.get(key), dict):
                allowed = cls.model_fields[target].annotation.__args__[0].model_fields  # type: ignore[union-attr]
                new[target] = {k: v for k, v in old[key].items() if k in allowed}
        if "a2" in new:
            new["a2"].setdefault("agent", "A2/v1")
            new["a2"].setdefault("provider", "")
        if "a3" in new:
            new["a3"].setdefault("agent", "A3/v1")
        if "a4" in new:
            new["a4"].setdefault("agent", "A4/v1")
        return new


Extras = create_model(
    "Extras",
    __base__=RunRecords,
    __module__=__name__,
    __doc__="Per-stage reports (one field per registered stage, written only by that stage) plus run records.\n\n"
    "Serialized under `extras` as the controller spec names it; the fields derive from the stage registry.",
    **{spec.name: (globals()[spec.report] | None, None) for spec in REGISTRY},
)


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

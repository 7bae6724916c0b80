"""The typed reports each stage records in `extras`, and the run's metadata derived from them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field

from ragstream.state.parts import PromptFormat
from ragstream.strategies import strategy_name

# A strategy's name as a report records it (or "NONE"); a checkpoint written with the seed's names reads
# them in today's (an old SEMANTIC is KEYWORD, BM25).
StrategyText = Annotated[str, BeforeValidator(strategy_name)]

Intent = Literal["factual", "research", "conversational", "transform"]
PlanSource = Literal["rules", "llm", "user"]  # who decided the plan


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
    """One strategy retrieval tried, the calibrated confidence of its result set, and the confidence a re-run
    compares strategies by (without the signals one strategy holds by construction; None in older runs)."""

    strategy: StrategyText
    confidence: float
    compared: float | None = None


class Plan(Report):
    """What the run decided to do with the prompt before retrieving: its intent and the retrieval plan.

    Decided once per run, where retrieval starts (so a plan is valid exactly as long as what it chose).
    `source` says who decided: `rules` (offline, `evidence` names the words), `llm` (the PLAN agent's
    reason), or `user` (an explicit strategy, which always wins).
    """

    intent: Intent
    confidence: float = Field(ge=0.0, le=1.0)
    reason: str
    evidence: list[str] = Field(default_factory=list)
    source: PlanSource
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
    """One typed record of what a run decided and spent: the contract clients read (docs/send.md, "Run metadata").

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
    # The run asked for strict mode: its unknown headers wait for a person (in the thread, for every process).
    strict: bool = False
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
    # Those of `uncovered` that are sentences of the ask every topic word of which some document holds: no kept
    # chunk has the evidence to answer them, but the documents may treat them in other words.
    unanswered: list[str] = Field(default_factory=list)
    # Offline, the chunks kept in the unsure band of an ask the documents treat (`gate.neighbours.keep_unsure`): last
    # in the order, and the Condenser's filler lines come from them only after the others'.
    unsure: list[str] = Field(default_factory=list)
    llm: LLMOutcomes | None = None
    # The rule that overruled a model's drops, in checkpoints of runs that still asked the model about what
    # the evidence keeps (before 2026-11-24); a model now only adds, and this stays empty.
    overruled: str = ""
    calibration: str = ""  # how the evidence threshold was set against this corpus (off-topic questions' evidence)
    # With a model, who decided each candidate: "model", "evidence (strong)" / "evidence (weak)" (outside the
    # band the model decides in, not asked), "evidence (kept)" (in the band, kept by the evidence: the model
    # only adds), "offline fallback", "duplicate"; older checkpoints also say "model, overruled by rule".
    judged_by: dict[str, str] = Field(default_factory=dict)


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
    reasons: dict[str, str] = Field(default_factory=dict)  # an unsupported or withheld line -> why it was left out
    lines: list[LineEvidence] = Field(default_factory=list)
    uncovered: list[str] = Field(default_factory=list)  # parts of the ask the selection does not cover (Open issues)
    unanswered: list[str] = Field(default_factory=list)  # those no excerpt answers, in words the documents hold
    # Those of `unanswered` a condensed line answers by A3's rule read as a sentence: weak evidence only
    weakly_evidenced: list[str] = Field(default_factory=list)
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
    lines in the indexed text, how it was hydrated (rendering/excerpts.py), and its text (read back
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
    def not_judged(self) -> str:
        """Why the last attempt has no verdict (the critic's reply invalid, or none), else ''."""
        return self.attempts[-1].critique.get("not_judged", "") if self.attempts else ""

    @property
    def retries(self) -> int:
        return max(len(self.attempts) - 1, 0)

"""Typed settings: `config/ragstream.json` defaults, overridden by environment variables.

CLI options override both by passing explicit values to `load_settings(overrides=...)`.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from ragstream.errors import ConfigError
from ragstream.strategies import Strategy

_PACKAGE_DIR = Path(__file__).resolve().parent

# The names config keys take, shared with the modules that read them.
ConfidenceSignal = Literal["dense_top", "dense_margin", "bm25_margin", "bm25_share", "agreement", "coverage"]
RerankSignal = Literal["dense", "chunk_bm25", "file_bm25"]
Prices = dict[str, dict[Literal["input", "output"], float]]  # model -> USD per 1M input/output tokens


class ChunkingSettings(BaseModel):
    """One size/overlap setting shared by ingestion and PreProcessing Task 4."""

    model_config = ConfigDict(extra="forbid")

    chunk_size: int = Field(gt=0)
    chunk_overlap: int = Field(ge=0)

    @model_validator(mode="after")
    def _overlap_below_half(self) -> ChunkingSettings:
        if self.chunk_overlap * 2 >= self.chunk_size:
            raise ValueError("chunk_overlap must be less than half of chunk_size")
        return self


class EmbeddingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Literal["local", "openai"] = "local"
    backend: Literal["onnx", "onnx-int8", "onnx-w8", "onnx-w8-int8", "torch"] = "onnx-w8-int8"
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str
    model_path: str | None = None
    max_input_tokens: int = Field(gt=8)
    batch_size: int = Field(gt=0)
    threads: int | None = Field(default=None, gt=0)  # embedding workers; None: every core this process may use
    memo_entries: int = Field(default=4096, ge=0)  # vectors of recent query-time texts kept per process (0: none)


class PreprocessingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    include_undecided: bool = False
    use_agent00: bool = True
    max_query_pieces: int = Field(
        16, gt=0
    )  # a long prompt searches with its first pieces by weight, the rest recorded as not kept


class IngestionSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_file_bytes: int = Field(gt=0)
    skip_dirs: list[str] = Field(default_factory=list)  # folders never walked (caches, installed dependencies)
    ignore_files: bool = True  # honour .gitignore, .ignore and .ragstreamignore (`ingest --no-ignore` turns off)
    file_bm25_k1: float = Field(default=0.9, gt=0)  # the whole-file BM25 index (document-level evidence)
    file_bm25_b: float = Field(default=0.4, ge=0, le=1)
    # module:function yielding a LangChain VectorStore (see ingestion/store.py); langchain-chroma by default
    vector_store: str = "ragstream.index.store:chroma_vector_store"


class ConfidenceSettings(BaseModel):
    """Retrieval confidence (retrieval/confidence.py): the logistic model's weights, fitted by
    bench/confidence_calibration.py, and the re-run taken when a chosen strategy's result is low."""

    model_config = ConfigDict(extra="forbid")

    weights: dict[ConfidenceSignal, float]
    bias: float
    low: float = Field(ge=0.0, le=1.0)
    top: int = Field(gt=0)
    near: int = Field(gt=0)
    coverage_top: int = Field(gt=0)
    rerun_strategies: list[Strategy] = Field(default_factory=list)  # the seed's SEMANTIC, PRECISE still read
    compare_without: list[ConfidenceSignal] = Field(default_factory=list)  # signals a re-run's comparison leaves out


class SecretsSettings(BaseModel):
    """Secret scanning of documents and prompts (`ragstream.secrets.scan`); `scan: false` turns it off."""

    model_config = ConfigDict(extra="forbid")

    scan: bool = True
    secret_files: list[str] = Field(default_factory=list)  # file names that hold secrets by nature: skipped
    mostly_secret_share: float = Field(default=0.5, gt=0, le=1)  # a file with more of its lines secret: skipped
    disabled_plugins: list[str] = Field(default_factory=list)  # detect-secrets plugin class names left out


class ExcerptSettings(BaseModel):
    """Whole excerpts at build time (rendering/excerpts.py)."""

    model_config = ConfigDict(extra="forbid")

    sentence_reach_chars: int = Field(default=1500, gt=0)  # how far an edge may move to a sentence boundary
    max_parent_tokens: int = Field(default=700, gt=0)  # the largest enclosing definition/list/section shown whole
    # the most a list and its lead-in may add to close an excerpt: closing comes before the budget is filled, so a
    # long list (a changelog) must not crowd out the excerpts after it; widening to the parent comes after
    max_closing_tokens: int = Field(default=700, gt=0)
    neighbour_chars: int = Field(default=1800, ge=0)  # the text around a kept excerpt shown while the budget allows


class RetrievalSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    top_k: int = Field(gt=0)
    max_candidates: int = Field(gt=0)
    rrf_k: float = Field(gt=0)
    weights: dict[Literal["vector", "bm25", "temporal", "graph", "sections"], float]
    min_score: float
    fallback_min_score: float
    min_results: int = Field(ge=0)
    temporal_half_life_days: float = Field(gt=0)
    expansion_seeds: int = Field(ge=0)
    expansion_neighbors: int = Field(ge=0)
    # The items an ask enumerates are searched for too, each with this weight (a prompt piece's is 1; 0: not searched)
    items_weight: float = Field(default=1.0, ge=0)
    # A section whose name more than this share of the chunks hold is the corpus's subject ("MkDocs" in MkDocs'
    # docs), not a thing the prompt picks out: it is not searched for by its heading
    sections_max_share: float = Field(default=0.2, ge=0, le=1)
    confidence: ConfidenceSettings


class RerankerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["embedding", "cross_encoder", "llm", "none"]
    model: str | None = None
    top_n: int = Field(gt=0)
    weights: dict[RerankSignal, float]
    # per kind of chunk (retrieval/kinds.py); a kind not named here uses `weights`
    kind_weights: dict[Literal["prose", "code", "table"], dict[RerankSignal, float]] = Field(default_factory=dict)


class GateSettings(BaseModel):
    """A3 offline: keep/drop from the evidence retrieval already has (see ragstream/gate/)."""

    model_config = ConfigDict(extra="forbid")

    min_similarity: float = Field(ge=-1.0, le=1.0)  # under it, no amount of shared words keeps a chunk
    words_weight: float = Field(ge=0.0)  # evidence = cosine + words_weight x share of the ask's word weight (idf)
    min_evidence: float  # a chunk is kept at this much evidence
    # ... and with at least this share of the ask's word weight, unless its cosine alone reaches strong_evidence:
    # on code, an English question about the package is as near in meaning to any of its code as to the answer.
    min_word_share: float = Field(default=0.05, ge=0.0, le=1.0)
    # With a model, it decides only within the evidence band [weak_evidence, strong_evidence): at or over
    # strong_evidence a candidate is kept and under weak_evidence the offline decision stands, unasked.
    strong_evidence: float
    weak_evidence: float = 0.45
    model_batch: int = Field(default=6, gt=0, le=8)  # passages judged per model call (A3/v2 takes at most 8)
    # A dropped candidate is kept when a kept chunk names its file in words this close (cosine) to the ask.
    min_reference_similarity: float = Field(ge=-1.0, le=1.0)
    function_words: list[str] = Field(default_factory=list)  # not evidence of shared content
    # Words that name no topic of their own: the work asked of the user's material ("review", "fix", "a corrected
    # version"), counts, generic nouns. Evidence like any word, but an ask naming nothing else is about the
    # user's own text and is not named as a topic the documents lack.
    generic_words: list[str] = Field(default_factory=list)
    # The last labels of a host name (a top-level domain): a name ending so, with its URL or e-mail address, is an
    # address the user gives (their site, docs.acme-tools.io), not a topic the documents could lack.
    address_suffixes: list[str] = Field(default_factory=list)
    shorthand: dict[str, str] = Field(default_factory=dict)  # chat shorthand the gate reads as the words it stands for
    # Calibration against the corpus (gate/calibration.calibrated): the off-topic questions (a file in
    # config/), the hits of each judged, and how far above their evidence (robust spreads) a chunk must be.
    off_topic_questions: str = "a3_off_topic.json"
    null_hits: int = Field(default=10, gt=0)
    null_z: float = 3.0
    null_min_spread: float = Field(default=0.03, ge=0.0)


class SupportSettings(BaseModel):
    """A4 with a model: when a condensed line is supported by the chunk it cites (see agents/a4_support.py)."""

    model_config = ConfigDict(extra="forbid")

    min_similarity: float = Field(ge=-1.0, le=1.0)  # cosine of the line to its best cited passage
    margin: float = Field(ge=0.0, le=1.0)  # passages this close to the best may agree with the line instead
    restates_prompt: float = Field(ge=-1.0, le=1.0)  # cosine to a sentence of the ask that makes it the ask's words
    # the share of a line's word weight (each content word by its rarity) its cited excerpt may lack
    max_new_words: float = Field(default=1.0, ge=0.0, le=1.0)
    # the count of new words from which that share applies (fewer may be a synonym or another form: kept/keeps)
    min_new_words: int = Field(default=1, ge=1)
    # the share of a line's word weight that may come from sentences away from the ones it is nearest (rule 10)
    max_far_words: float = Field(default=1.0, ge=0.0, le=1.0)
    negation_cues: list[str]
    obligation_cues: list[str]
    permission_cues: list[str]
    # a modal that puts a doer before an instruction's words ("The user must store ..."): rule 5 of the check
    modal_cues: list[str] = Field(default_factory=list)
    # how a sentence opens on what its reader wants or does ("If you want ..."): advice under that condition (rule 11)
    reader_conditions: list[str] = Field(default_factory=list)
    # the content words a line may name its subject in that the section of the sentence it restates lacks (rule 12)
    max_subject_words: int = Field(default=1, ge=0)
    # how a line opens on a purpose or condition ("To enable X, ...", "If ..."): the sentence it restates must state it
    condition_openers: list[str] = Field(default_factory=list)
    # negation cues whose clause is affirmed before them ("To allow any site ... without using the wildcard", rule 4)
    negation_openers: list[str] = Field(default_factory=list)
    # what says a named thing is to go ("delete", "remove"): a line may not give it as one to set or use (rule 4)
    removal_cues: list[str] = Field(default_factory=list)
    # how a sentence only supposes what follows ("let's say that ..."): a line may not state it as fact (rule 14)
    supposition_cues: list[str] = Field(default_factory=list)


class CondenserSettings(BaseModel):
    """A4 offline: query-focused extraction (see agents/a4_condenser.py)."""

    model_config = ConfigDict(extra="forbid")

    max_lines: int = Field(gt=0)
    mmr_lambda: float = Field(ge=0.0, le=1.0)
    min_relevance: float = Field(ge=-1.0, le=1.0)
    constraint_cues: list[str]
    open_issue_cues: list[str]
    decision_cues: list[str]
    # Sentences that are not content about the ask: narration and cross-references ("in the next
    # chapter", "see below"), and openings that lean on what came before ("This", "It", "See").
    narration_cues: list[str] = Field(default_factory=list)
    dangling_openers: list[str] = Field(default_factory=list)
    # Openings that qualify the sentence before ("However, it's not recommended to ..."): that sentence is read with
    # its qualification or not at all; alone ("You may think adding `no-store` would be the right way to opt-out of
    # caching.") it says what its document goes on to deny.
    qualifying_openers: list[str] = Field(default_factory=list)
    # Words that, in lower case, open the rest of a sentence a code block or a chunk's edge interrupted ("```toml
    # ...``` where `my-registry` is the registry name ..."): no sentence of its own, read with the one it ends.
    continuing_openers: list[str] = Field(default_factory=list)
    example_cues: list[str] = Field(default_factory=list)  # an example is not a Constraint, whatever its "must"
    # Nouns of numbered exhibits ("Listing 20-2", "Figure 3"): a sentence that opens by pointing at one says
    # where to look ("Listing 20-2 shows how to ..."), and the exhibit itself is in the excerpt.
    exhibit_nouns: list[str] = Field(default_factory=list)
    # Nouns a sentence counts out before it gives them ("you need to take one additional step so that ..."): the
    # sentence right after it gives what it announces, and comes with it.
    announced_nouns: list[str] = Field(default_factory=list)
    # Names of changelog files (their stem, case and "-", "_", "." ignored): what changed in which version, a line
    # that answers a part of the ask there, never filler beside the pages that say how things work.
    changelog_names: list[str] = Field(default_factory=list)
    max_share: float = Field(default=1.0, gt=0.0, le=1.0)  # condensed lines' tokens at most this share of the excerpts'
    min_tokens: int = Field(
        default=0, ge=0
    )  # ... or this many tokens, for short excerpts (where repeating costs little)
    per_part: int = Field(default=2, gt=0)  # lines chosen by evidence for each clause of the ask, before any other
    max_similarity: float = Field(default=0.9, ge=-1.0, le=1.0)  # a line this close (cosine) to a chosen one repeats it
    support: SupportSettings


class PlanSettings(BaseModel):
    """The run's plan (see agents/planner.py): offline intent rules, what each intent retrieves, and
    what a failed retrieval gives."""

    model_config = ConfigDict(extra="forbid")

    min_confidence: float = Field(ge=0.0, le=1.0)  # below it the plan escalates: it retrieves, and wider
    research_candidates: int = Field(gt=0)  # the most candidates a plan retrieves (and an unsure one's)
    research_budget: int = Field(gt=0)  # token ceiling of the excerpts for a research plan
    social_phrases: list[str]
    transform_verbs: list[str]
    deictic_targets: list[str]
    research_cues: list[str]  # words that ask for research: the research intent
    breadth_cues: list[str]  # words that name an ask's breadth: the research intent, and more candidates
    candidates_per_part: int = Field(ge=0)  # more candidates for each further part asked
    breadth_candidates: int = Field(ge=0)  # more candidates when a breadth cue is there
    on_retrieval_failure: Literal["fail", "continue"]


class WebSearchSettings(BaseModel):
    """The optional web-search tool: a SearxNG server (its JSON API) the user runs or trusts; off by default."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    url: str | None = None  # e.g. http://127.0.0.1:8888 (SearxNG with `search.formats: [json]`)
    max_results: int = Field(5, gt=0)
    timeout_s: float = Field(10.0, gt=0)


class ToolsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    web_search: WebSearchSettings = Field(default_factory=WebSearchSettings)


class BudgetSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ceilings: dict[str, int]
    tiktoken_encoding: str = "o200k_base"
    estimate_factor: float = Field(gt=0)


class MemorySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    persist: bool = True
    keep_turns: int = Field(ge=0)
    summary_budget: int = Field(gt=0)
    salience_half_life_turns: float = Field(gt=0)
    max_notes: int = Field(ge=0)
    # what goes into the prompt (memory/selection.py): budgets in tokens, similarity to the ask
    recent_budget: int = Field(gt=0)
    snippet_budget: int = Field(gt=0)
    notes_budget: int = Field(gt=0)
    max_snippets: int = Field(ge=0)
    min_similarity: float = Field(ge=-1.0, le=1.0)


class SendSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    temperature: float = Field(ge=0.0, le=2.0)
    max_tokens: int = Field(gt=0)
    critic_max_retries: int = Field(ge=0)
    critic_new_chunks: int = Field(default=3, ge=0)  # chunks retrieved for what the critic found missing


class TelemetrySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    otel: Literal["none", "console", "otlp"] = "none"
    redact_patterns: list[str] = Field(default_factory=list)


class LLMSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: Literal["auto", "local", "openai"] = "auto"
    base_url: str | None = None
    api_key: SecretStr | None = None
    timeout_s: float = Field(gt=0)
    # Until the endpoint has answered once in this process (a local server loads the model on its first
    # call); None: timeout_s.
    first_call_timeout_s: float | None = Field(default=None, gt=0)
    max_retries: int = Field(ge=0)
    # A timed-out call is sent again at most this often (within max_retries), each time with twice the deadline.
    timeout_retries: int = Field(default=1, ge=0)
    backoff_initial_s: float = Field(ge=0)
    backoff_max_s: float = Field(ge=0)
    max_concurrency: int = Field(default=4, gt=0)
    max_in_flight: int = Field(default=16, gt=0)
    rate_limit_patience_s: float = Field(default=120.0, ge=0)
    # How the endpoint takes an agent's schema: enforced by the server (json_schema), JSON only
    # (json_object), or none (prompt: the schema in the prompt, the reply validated); auto probes once.
    structured_output: Literal["auto", "json_schema", "json_object", "prompt"] = "auto"
    prices: Prices = Field(default_factory=dict)

    @property
    def resolved_provider(self) -> Literal["local", "openai"]:
        """`auto` means openai when a key or base URL is configured, else the offline provider."""
        if self.provider == "auto":
            return "openai" if (self.api_key or self.base_url) else "local"
        return self.provider


class ServerSettings(BaseModel):
    """Limits for runs on the shared LangGraph server, where one user's run must not starve the others."""

    model_config = ConfigDict(extra="forbid")

    max_prompt_chars: int = Field(50_000, gt=0)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    config_dir: Path
    data_dir: Path
    max_prompt_chars: int = Field(gt=0)
    chunking: ChunkingSettings
    embedding: EmbeddingSettings
    preprocessing: PreprocessingSettings
    ingestion: IngestionSettings
    secrets: SecretsSettings = Field(default_factory=SecretsSettings)
    retrieval: RetrievalSettings
    excerpts: ExcerptSettings = Field(default_factory=ExcerptSettings)
    reranker: RerankerSettings
    gate: GateSettings
    condenser: CondenserSettings
    plan: PlanSettings
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    budget: BudgetSettings
    memory: MemorySettings
    send: SendSettings
    telemetry: TelemetrySettings
    llm: LLMSettings
    server: ServerSettings = Field(default_factory=ServerSettings)
    checkpoint_url: str | None = None
    chroma_url: str | None = None
    database_url: str | None = None  # PostgreSQL shared by a deployment's machines: index, manifests, users, memory
    models_path: Path | None = None

    @model_validator(mode="after")
    def _embedding_credentials(self) -> Settings:
        if self.embedding.provider == "openai" and not (self.embedding.api_key or self.embedding.base_url):
            raise ValueError("embedding.provider 'openai' needs OPENAI_API_KEY or OPENAI_BASE_URL")
        return self

    @property
    def prompt_schema_path(self) -> Path:
        return self.config_dir / "prompt_schema.json"

    @property
    def agents_dir(self) -> Path:
        return self.config_dir / "agents"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"

    @property
    def models_dir(self) -> Path:
        """Models derived on this machine (the ONNX export of the embedder), keyed by their weights.

        Under the data root unless `models_path` (RAGSTREAM_MODELS_DIR) shares one folder between roots.
        """
        return self.models_path or self.data_dir / "models"


def resource_dir(name: str) -> Path:
    """A top-level folder of the repo (`config`, `examples`) in a checkout, its packaged copy in a wheel."""
    checkout = _PACKAGE_DIR.parent / name
    return checkout if checkout.is_dir() else _PACKAGE_DIR / f"_{name}"


def default_config_dir() -> Path:
    env = os.environ.get("RAGSTREAM_CONFIG_DIR")
    return Path(env) if env else resource_dir("config")


def read_json_file(path: Path) -> Any:
    """Read a JSON config file, turning every failure into a ConfigError that names the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc


def config_error_from(path: Path, exc: ValidationError) -> ConfigError:
    """A ConfigError naming the file and every offending field, never echoing values (secrets)."""
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}" for err in exc.errors()
    )
    return ConfigError(f"{path}: {problems}")


_ENV_OVERRIDES: dict[str, tuple[tuple[str, ...], ...]] = {
    "RAGSTREAM_DATA_DIR": (("data_dir",),),
    "RAGSTREAM_LLM_PROVIDER": (("llm", "provider"),),
    "RAGSTREAM_STRUCTURED_OUTPUT": (("llm", "structured_output"),),
    "OPENAI_API_KEY": (("llm", "api_key"), ("embedding", "api_key")),
    "OPENAI_BASE_URL": (("llm", "base_url"), ("embedding", "base_url")),
    "RAGSTREAM_CHECKPOINT_URL": (("checkpoint_url",),),
    "RAGSTREAM_CHROMA_URL": (("chroma_url",),),
    "RAGSTREAM_DATABASE_URL": (("database_url",),),
    "RAGSTREAM_MODELS_DIR": (("models_path",),),
}


def _set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ConfigError(f"setting '{key}' must be an object")
    node[path[-1]] = value


def load_settings(config_dir: Path | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """Build Settings from the JSON defaults, the environment, then explicit overrides.

    `overrides` uses dotted keys (`{"llm.provider": "local"}`), the way CLI options arrive.
    """
    cdir = Path(config_dir) if config_dir else default_config_dir()
    path = cdir / "ragstream.json"
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object")
    data["config_dir"] = str(cdir)
    for env_name, key_paths in _ENV_OVERRIDES.items():
        value = os.environ.get(env_name)
        if value:
            for key_path in key_paths:
                _set_path(data, key_path, value)
    for dotted, value in (overrides or {}).items():
        _set_path(data, tuple(dotted.split(".")), value)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise config_error_from(path, exc) from None


@lru_cache(maxsize=1)
def default_settings() -> Settings:
    """Settings for callers that have none of their own (read once per process)."""
    return load_settings()

"""A suite through the real graph: its corpus ingested into its own project, every case run with the current
configuration, and what each stage recorded collected per case.

The fused, reranked and gated lists are the run's own views (`views_by_stage`); the keyword and dense lists,
which the run fuses without keeping, are the same searcher asked with KEYWORD and DENSE for the run's own
query pieces. Latency per stage comes from the graph's stage_finish events.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragstream.evaluation.checks import Support, judge, verbatim_support
from ragstream.evaluation.metrics import Ranked, rank_metrics
from ragstream.evaluation.suite import Case, Suite, SuiteError, beir_path
from ragstream.retrieval.chunks import query_pieces
from ragstream.settings import Settings
from ragstream.stages.options import RunOptions
from ragstream.state import Chunk, SuperPrompt
from ragstream.strategies import Strategy
from ragstream.text.chunk_ids import source_of

log = logging.getLogger("ragstream.evaluation")
# The retrieval lists judged per case, in pipeline order; the last three are the run's views.
STAGES = ("keyword", "dense", "fused", "reranked", "gated")
VIEWS = {"fused": "retrieval", "reranked": "reranked", "gated": "a3"}
# Settings that name where things are, not how RAGstream behaves: left out of the configuration digest.
_PLACES = ("config_dir", "data_dir", "checkpoint_url", "chroma_url", "models_path")


@dataclass
class EvalRun:
    """One run of a suite: what it ran on and each case's results (JSON-able dicts, as saved)."""

    suite: str
    kind: str
    project: str
    config_digest: str
    corpus_fingerprint: str
    options: dict[str, Any]
    support_check: str
    cases: list[dict[str, Any]] = field(default_factory=list)
    ingest: str = ""
    started: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "kind": self.kind,
            "project": self.project,
            "config_digest": self.config_digest,
            "corpus_fingerprint": self.corpus_fingerprint,
            "options": self.options,
            "support_check": self.support_check,
            "ingest": self.ingest,
            "started": self.started,
            "cases": self.cases,
        }


def default_project(suite: Suite) -> str:
    return f"eval-{suite.name}"[:64]


def config_digest(settings: Settings, options: RunOptions) -> str:
    """What decides a run's results: the settings (not where files are), the run options and the agent configs."""
    values = settings.model_dump(mode="json", exclude=set(_PLACES))
    values.setdefault("llm", {}).pop("api_key", None)
    digest = hashlib.sha256(json.dumps(values, sort_keys=True).encode())
    digest.update(json.dumps(options.model_dump(mode="json", exclude={"project"}), sort_keys=True).encode())
    agents = settings.config_dir / "agents"
    for path in sorted(agents.rglob("*.json")) if agents.is_dir() else []:
        digest.update(path.relative_to(agents).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def corpus_fingerprint(suite: Suite) -> str:
    """The corpus's files and their bytes: two runs compare only over the same documents."""
    digest = hashlib.sha256()
    if suite.documents:
        for doc_id in sorted(suite.documents):
            digest.update(f"{beir_path(doc_id)}\0{suite.documents[doc_id]}\0".encode())
    else:
        for path in sorted(p for p in suite.corpus.rglob("*") if p.is_file()):
            digest.update(path.relative_to(suite.corpus).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def support_check(services: Any, project: str) -> tuple[str, Support]:
    """How a condensed line is judged against the chunks it cites: its words are the chunk's (an extractive
    line), or else, when this version has it, A4's own support check (issue 36: a model's line against the
    cited sentences) passes it, built as the stage builds it (issue 40: the project's word rarity too, so no rule
    of the stage is off in the judge). The report names which judge ran."""
    from ragstream.stages.io import StageEnv

    try:
        module = importlib.import_module("ragstream.stages.a4")
        checker = module.support_check(StageEnv(services=services, context=RunOptions(project=project)), project)
    except (ImportError, AttributeError):
        return "verbatim (the cited excerpt is shown and the line's words are in it)", verbatim_support

    def judge(
        lines: Sequence[tuple[str, list[str]]], chunks: Mapping[str, Chunk], asks: Sequence[str]
    ) -> list[tuple[bool, str]]:
        verdicts = verbatim_support(lines, chunks, asks)
        rest = [i for i, (ok, _) in enumerate(verdicts) if not ok]
        if rest:
            checked = checker.check([lines[i] for i in rest], dict(chunks), list(asks))
            for i, verdict in zip(rest, checked, strict=True):
                verdicts[i] = (verdict.supported, verdict.reason)
        return verdicts

    return "verbatim, else A4's support check (ragstream.condensing.support)", judge


def check_own_project(settings: Settings, project: str, suite: Suite) -> None:
    """Refuse a project that holds other documents: ingesting a suite's corpus into it would replace them."""
    from ragstream.tenancy.projects import project_paths

    paths = project_paths(settings, project)
    if not paths.store_dir.exists() and not paths.raw_dir.exists():
        return
    if suite.documents:
        mine = suite.paths()
        others = [
            p for p in paths.raw_dir.rglob("*") if p.is_file() and p.relative_to(paths.raw_dir).as_posix() not in mine
        ]
        ok = paths.source_dir().resolve() == paths.raw_dir.resolve() and not others
    else:
        ok = paths.source_dir().resolve() == suite.corpus.resolve()
    if not ok:
        raise SuiteError(
            f"project {project!r} holds other documents ({paths.source_dir()}): a suite is ingested into its own "
            "project; choose another --project"
        )


def write_beir_corpus(suite: Suite, folder: Path) -> None:
    """One file per document (title, blank line, text); an unchanged file is not rewritten, so re-ingesting
    embeds nothing again."""
    folder.mkdir(parents=True, exist_ok=True)
    for doc_id, text in suite.documents.items():
        path = folder / beir_path(doc_id)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def run_suite(
    suite: Suite,
    session: Any,
    project: str,
    options: RunOptions,
    limit: int = 0,
    progress: Callable[[int, int, str], None] | None = None,
) -> EvalRun:
    """Ingest the corpus into `project` (only changed files re-embed) and run every case (the first `limit`).

    `session` is the RunSession the surface opened (on a throwaway checkpointer): the runs go through the same
    door as every other run, and this package stays below the surfaces that call it."""
    from ragstream.tenancy.projects import project_paths

    settings: Settings = session.settings
    services = session.services
    if suite.documents:
        folder = project_paths(settings, project).raw_dir
        write_beir_corpus(suite, folder)
        stats = session.workspace.ingest_docs(project, source=folder)
    else:
        stats = session.workspace.ingest_docs(project, source=suite.corpus)
    name, check = support_check(services, project)
    run = EvalRun(
        suite=suite.name,
        kind=suite.kind,
        project=project,
        config_digest=config_digest(settings, options),
        corpus_fingerprint=corpus_fingerprint(suite),
        options=options.model_dump(mode="json", exclude={"project"}),
        support_check=name,
        ingest=stats.summary(),
        started=time.strftime("%Y-%m-%d %H:%M:%S"),
    )
    cues = _format_cues(services)
    cases = suite.cases[:limit] if limit else suite.cases
    for number, case in enumerate(cases, start=1):
        run.cases.append(run_case(session, case, project, options, cues, check))
        if progress:
            progress(number, len(cases), case.name)
    return run


def _format_cues(services: Any) -> dict[str, list[str]]:
    """A5's documented words per format kind: what it takes for a prompt to ask for that format."""
    from ragstream.llm.providers.keyword_rules import naming_cues

    config = services.runner.factory.load_config("A5", "v1")
    return naming_cues(config.output_schema["properties"]["kind"])


def run_case(
    session: Any, case: Case, project: str, options: RunOptions, cues: dict[str, list[str]], check: Support
) -> dict[str, Any]:
    """One case on a fresh thread: the final prompt, its checks, each stage's list judged, tokens and latency."""
    latency: dict[str, float] = {}

    def on_event(event: dict[str, Any]) -> None:
        if event.get("event") == "stage_finish":
            latency[event["stage"]] = event["duration_ms"]

    session.thread_id = uuid.uuid4().hex[:12]
    session.on_event = on_event
    session.select_project(project)
    result: dict[str, Any] = {"name": case.name, "kind": case.fields.get("kind", ""), "prompt": case.prompt}
    started = time.perf_counter()
    try:
        sp: SuperPrompt = session.run_full_pipeline(case.prompt, options, project=project, pause_after="none").state
    except Exception as exc:  # noqa: BLE001 - one case that cannot run is reported, the others still run
        log.info("case %s could not run", case.name, exc_info=exc)  # the traceback with -v
        first = str(exc).splitlines()[0] if str(exc) else ""
        result.update(error=f"{type(exc).__name__}: {first}", checks=[], passed=False, score=0.0, final_prompt="")
        return result
    latency["total"] = (time.perf_counter() - started) * 1000
    checks = judge(case, sp, cues, check)
    hard = [c for c in checks if not c.soft]
    budget = session.services.budget
    result.update(
        error=None,
        final_prompt=sp.prompt_ready,
        checks=[c.as_dict() for c in checks],
        passed=all(c.passed for c in hard),
        score=sum(c.passed for c in hard) / len(hard) if hard else 1.0,
        tokens={"prompt": budget.count(sp.prompt_ready), "excerpts": budget.count(sp.attachments_md)},
        latency_ms={k: round(v, 2) for k, v in latency.items()},
    )
    if case.relevant:
        result["retrieval"] = {
            stage: rank_metrics(ranking, case.relevant) for stage, ranking in _rankings(session, sp, project).items()
        }
    return result


def _rankings(session: Any, sp: SuperPrompt, project: str) -> dict[str, list[Ranked]]:
    """Each stage's ranked list. A stage that did not run (skipped, or no retrieval planned) ranks what the stage
    before it left, as the pipeline itself does."""
    searcher = session.services.searcher(project)
    snapshot = searcher.snapshot()

    def ranked(ids: list[str]) -> list[Ranked]:
        out = []
        for cid in ids:
            try:
                meta = snapshot.chunk(cid).metadata
            except KeyError:
                out.append(Ranked(source_of(cid)))
                continue
            first, last = meta.get("line_start"), meta.get("line_end")
            lines = (int(first), int(last)) if isinstance(first, int) and isinstance(last, int) else None
            out.append(Ranked(source_of(cid), lines))
        return out

    lists: dict[str, list[Ranked]] = {}
    pieces = query_pieces(sp)
    for stage, strategy in (("keyword", Strategy.KEYWORD), ("dense", Strategy.DENSE)):
        ids = searcher.retrieve(pieces, strategy, rerun=False).ids if pieces else []
        lists[stage] = ranked(ids)
    previous: list[str] = []
    for stage, view in VIEWS.items():
        previous = sp.views_by_stage.get(view, previous)
        lists[stage] = ranked(previous)
    return lists

"""The A4 Condenser stage: the selection condensed into cited lines within the context budget.

Offline the lines are extracted from the excerpts; with a model the A4 agent writes them, and the extraction
stands in when its reply stays invalid or none of its lines holds (`run` chooses once).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ragstream.stages.a3 import ask_rarity, respelled_texts
from ragstream.stages.io import StageEnv, StageOutput
from ragstream.stages.spec import CONDENSED, PROMPT, SELECTION, stage_spec
from ragstream.state import A4Report, Chunk, LLMOutcomes, Stage, SuperPrompt

if TYPE_CHECKING:
    from ragstream.condensing.extractive import Evidence
    from ragstream.condensing.support import SupportCheck

SPEC = stage_spec(
    "a4",
    "A4 Condenser",
    "rerank",
    "the Condenser needs A3, or the ReRanker with a non-empty selection",
    {PROMPT, SELECTION},
    {CONDENSED, SELECTION},
    fields=("s_ctx_md",),
)
REPORT = A4Report

Condensed = tuple[str, list[str], A4Report]  # s_ctx_md, the ids kept, the report
Widen = Callable[[list[Chunk]], list[Chunk]]


@dataclass(frozen=True)
class Ask:
    """What either path condenses the selection for."""

    pieces: list[str]  # the query pieces and the covered clauses of the ask: what a line may be relevant to
    parts: list[str]  # the clauses of the ask, in order: the answer's skeleton
    missing: list[str]  # the parts of the ask no kept chunk covers (A3's measure)
    lacking: bool  # a whole part is among them, not only a name the documents lack inside a covered part
    selection: list[Chunk]
    whole: Widen  # the chunks that fit A4's budget as the prompt will show them: whole sentences
    weigh: Evidence  # A3's evidence for a text and a part of the ask (`evidence`)
    unanswered: tuple[str, ...] = ()  # those of `missing` worded as the documents word things (A3's)
    unsure: frozenset[str] = frozenset()  # the chunks A3 kept last, in its unsure band
    first: tuple[str, ...] = ()  # the best answer to each covered part no chunk within the budget answers


def whole(sp: SuperPrompt, env: StageEnv) -> Widen:
    """Chunks widened to whole sentences and closed over their lead-ins and lists from the project's documents
    (`sentence_whole`), as the prompt will at least show them (less the code block a last lead-in introduces); one
    reader for the run,
    so the model path's two widenings (its extraction, then the excerpts it sends) read each document once."""
    from ragstream.rendering.excerpts import Excerpt, closed_excerpt, sentence_whole
    from ragstream.stages.sources import project_sources

    cfg = env.services.settings.excerpts
    budget = env.services.budget
    sources = project_sources(sp, env)

    def close(excerpt: Excerpt) -> Excerpt:
        """Closed over the list its lead-in announces, not over the code block it introduces: that block is an example
        the excerpt shows, and read into the lead-in's line it took the condensed share from the next answer (mdn
        c03 lost "... a `412 Precondition Failed` error is thrown.")."""
        closed = closed_excerpt(excerpt, lambda e: budget.count(e.as_chunk().text), cfg)
        doc = closed.doc
        added = doc.text[excerpt.end : closed.end] if doc is not None else ""
        return excerpt if added.lstrip().startswith(("```", "~~~")) else closed

    return lambda chunks: sentence_whole(chunks, sources, cfg.sentence_reach_chars, close)


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[A4Report]:
    from ragstream.condensing.condenser import nothing_to_condense, render_sctx, uncovered
    from ragstream.gate.ask_parts import asking_parts
    from ragstream.rendering.ask import normalized_ask
    from ragstream.retrieval.chunks import query_pieces

    by_id = sp.chunk_by_id()
    selection = [by_id[cid] for cid in sp.selection_before(Stage.A4) if cid in by_id]
    services = env.services
    if not selection:  # A3 dropped every candidate: the documents do not cover the ask, and the prompt says so
        missing = uncovered(sp, selection) if sp.extras.a3 is not None and sp.extras.a3.decisions else []
        unanswered = unanswered_of(sp, missing)
        text = render_sctx({}, missing, unanswered) if missing else nothing_to_condense(sp)
        report = A4Report(agent="none (no excerpts)", uncovered=missing, unanswered=list(unanswered))
        return StageOutput(updates={"s_ctx_md": text}, report=report, selection=[])
    missing = uncovered(sp, selection)
    unanswered = unanswered_of(sp, missing)
    # The covered clauses of a multi-part ask are pieces too: a line answering one clause is relevant to it
    # even when the whole sentence, about something the documents lack as well, is not.
    parts = asking_parts(sp, services.settings)
    covered = [c for c in parts if not any(c in part for part in missing)]
    pieces = list(dict.fromkeys([q.text for q in query_pieces(sp)] + covered)) or [normalized_ask(sp)]
    lacking = any(part in missing for part in asking_parts(sp, services.settings, standalone=True))
    # A part A3 found unanswered is one the lines are weighed for, though the clauses of the ask hold it only
    # inside a longer sentence ("How do I fix this, and is it safe to trust X-Forwarded-For from anyone?" read
    # with the sentences "this" leans on): a line answering it is then said to, not left beside "No excerpt answers".
    parts += [part for part in unanswered if part not in parts]
    unsure = frozenset(sp.extras.a3.unsure) if sp.extras.a3 is not None else frozenset()
    weigh = evidence(sp, env, pieces, parts)
    ask = Ask(pieces, parts, missing, lacking, selection, whole(sp, env), weigh, unanswered, unsure)
    ask = replace(ask, first=answering_chunks(sp, env, ask))
    text, kept, report = offline(sp, env, ask) if services.offline else with_model(sp, env, ask)
    return StageOutput(updates={"s_ctx_md": text}, report=report, selection=kept)


def unanswered_of(sp: SuperPrompt, missing: list[str]) -> tuple[str, ...]:
    """Those of `missing` that A3 found only unanswered by the excerpts, not absent from the documents."""
    found = set(sp.extras.a3.unanswered) if sp.extras.a3 is not None else set()
    return tuple(part for part in missing if part in found)


def answering_chunks(sp: SuperPrompt, env: StageEnv, ask: Ask) -> tuple[str, ...]:
    """For each part of the ask the documents cover that no chunk within A4's budget answers (A3's rule), the chunk
    of the selection with the most evidence for it, if one has enough: A4's budget reads these first. In the
    selection's order the chunks on the first parts could fill it, and the only answer to a later part sat past it.
    A part some chunk within the budget answers changes nothing: the best-evidenced chunk is often a near tie with
    it, and taking it pushed out the answer ("caching the results of a slow database query" chose a widget page
    at 0.579 over Streamlit's caching page at 0.578); nor does a lead-in ("Explain the following options:"), whose
    items are the parts it stands for."""
    from ragstream.condensing.condenser import read_first
    from ragstream.stages.a3 import candidate_vectors

    parts = [part for part in ask.parts if part not in ask.missing and not part.rstrip().endswith(":")]
    if len(parts) < 2:
        return ()
    budget = env.services.budget
    read, _ = read_first(ask.selection, budget, budget.count("\n".join(ask.pieces)))
    answering = {c.id for c in read}
    texts = [c.text for c in ask.selection]
    vectors = candidate_vectors(sp, ask.selection, env)
    chosen: list[str] = []
    for part, part_vector in zip(parts, env.services.embedder.embed(parts), strict=True):
        scores, enough = ask.weigh(part, texts, vectors, part_vector)
        if any(enough[i] for i, c in enumerate(ask.selection) if c.id in answering):
            continue
        best = max((i for i in range(len(texts)) if enough[i]), key=lambda i: scores[i], default=None)
        if best is not None:
            chosen.append(ask.selection[best].id)
            answering.add(ask.selection[best].id)
    return tuple(chosen)


def evidence(sp: SuperPrompt, env: StageEnv, pieces: list[str], parts: list[str]) -> Evidence:
    """A3's evidence for a line and a part of the ask, with the project's rarity of the ask's words; each part read
    as A3 reads it, its misspelt words as the corpus spells them ("which one wins" for "the real enviroment" was
    judged unanswered by A3 against "environment", and against "enviroment" here no line could answer it)."""
    from ragstream.condensing.condenser import a3_evidence

    project = env.context.project or sp.extras.project
    texts = list(dict.fromkeys([*pieces, *parts]))
    snapshot = env.services.searcher(project).snapshot() if project else None
    read = dict(zip(texts, respelled_texts(texts, snapshot, env.services.settings.gate.shorthand), strict=True))
    _, rarity = ask_rarity(list(read.values()), env, project)
    return a3_evidence(env.services.settings.gate, rarity, read, env.services.embedder.embed)


def offline(sp: SuperPrompt, env: StageEnv, ask: Ask, why: str = "") -> Condensed:
    """Lines extracted from the excerpts; `why` says why a model's reply fell back to them."""
    from ragstream.condensing.condenser import condense_offline

    services = env.services
    text, kept, report = condense_offline(
        ask.pieces,
        ask.selection,
        services.embedder,
        services.budget,
        services.settings.condenser,
        ask.missing,
        ask.parts,
        ask.weigh,
        ask.whole,
        ask.lacking,
        ask.unanswered,
        ask.unsure,
        ask.first,
    )
    if why:
        report = report.model_copy(update={"llm": LLMOutcomes(fell_back=1, notes=[why])})
    return text, kept, report


def support_check(env: StageEnv, project: str | None) -> SupportCheck:
    """The check a model's condensed line must pass, with the project's rarity of its words and the offline
    extraction's rule for a line that stands alone. Eval's judge builds it here too: a line it calls supported is
    one this stage would have let through."""
    from ragstream.condensing.extractive import stands_alone
    from ragstream.condensing.support import SupportCheck

    settings = env.services.settings

    def weigh(text: str) -> dict[str, float]:  # words as the excerpt's are read: "re-embeds" is no word it lacks
        return ask_rarity([text], env, project, joined=False)[1]

    return SupportCheck(
        settings.condenser.support,
        env.services.embedder.embed_together,
        weigh,
        lambda text: stands_alone(text, settings.condenser),
        settings.condenser.exhibit_nouns,
    )


def with_model(sp: SuperPrompt, env: StageEnv, ask: Ask) -> Condensed:
    """Lines the A4 agent writes, each checked against the excerpt it cites, beside the extraction's lines; the
    extraction alone when none holds."""
    from ragstream.condensing.condenser import addressed_to_reader, condense, extracted, weakly_evidenced
    from ragstream.rendering.ask import normalized_ask
    from ragstream.text.sentences import TYPED, split

    services = env.services
    check = support_check(env, env.context.project or sp.extras.project)
    lines, _, _ = extracted(
        ask.pieces,
        ask.selection,
        services.embedder,
        services.budget,
        services.settings.condenser,
        ask.parts,
        ask.weigh,
        ask.whole,
        lacking=ask.lacking,
        unsure=ask.unsure,
        first=ask.first,
    )
    extraction = [(line.section, line.text, [line.chunk_id]) for line in lines if not addressed_to_reader(line.text)]

    def fallback(why: str) -> Condensed:
        return offline(sp, env, ask, why)

    return condense(
        normalized_ask(sp),
        ask.selection,
        services.runner,
        services.budget,
        fallback,
        check,
        split(normalized_ask(sp), TYPED) + ask.parts,
        uncovered=ask.missing,
        standing=extraction,
        whole=ask.whole,
        unanswered=ask.unanswered,
        weak=weakly_evidenced(
            [line for line in lines if not addressed_to_reader(line.text)], ask.parts, ask.unanswered
        ),
        first=ask.first,
    )

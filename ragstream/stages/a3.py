"""The A3 NLI Gate stage: keep or drop each candidate the selection holds, on the evidence the run has.

Both paths weigh the same evidence first (`weigh`); offline it decides, with a model the A3 agent decides
within its band (`run` chooses once). What the documents do not cover is then measured on what was kept,
whoever decided it: a model's keep is no evidence that every part of the ask is answered, only within the
band where its word decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragstream.stages.io import StageEnv, StageOutput
from ragstream.stages.spec import PROMPT, SELECTION, stage_spec
from ragstream.state import A3Report, Chunk, Stage, SuperPrompt

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy as np

    from ragstream.gate.calibration import Calibration
    from ragstream.gate.evidence import Weighed
    from ragstream.index.snapshot import Snapshot
    from ragstream.settings import GateSettings

SPEC = stage_spec(
    "a3",
    "A3 NLI Gate",
    "retrieval",
    "the NLI gate needs retrieved chunks",
    {PROMPT, SELECTION},
    {SELECTION},
    skippable=True,
)
REPORT = A3Report


@dataclass(frozen=True)
class Evidence:
    """What either path decides on, and what the coverage of the kept chunks is measured with."""

    ask: str
    candidates: list[Chunk]
    vectors: np.ndarray
    texts: list[str]  # the query pieces and the parts of the ask, each once
    judged: list[str]  # `texts` as the evidence reads them: misspelt words as the corpus spells them
    embedded: np.ndarray  # the embeddings of `judged`
    parts: list[str]  # the standalone parts of the ask, each named when no kept chunk covers it
    leaning: list[str]  # the clauses leaning on the rest of their sentence: only names in them are judged
    rarity: dict[str, float]
    absent: set[str]  # the ask's terms no document mentions, less the user's own things
    calibration: Calibration
    settings: GateSettings  # with the calibrated `min_evidence`
    weighed: Weighed


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[A3Report]:
    evidence = weigh(sp, env)
    if evidence is None:  # the plan retrieved nothing, or retrieval failed and the run continues
        return StageOutput(report=A3Report(agent="none (no candidates)"), selection=[])
    kept, report = offline(evidence) if env.services.offline else with_model(evidence, env)
    return StageOutput(report=covered(sp, evidence, kept, report), selection=kept)


def offline(evidence: Evidence) -> tuple[list[str], A3Report]:
    """The evidence decides, and keeps the unsure band last when the documents treat the ask (it names nothing they
    lack): with a model, the model decides that band."""
    from ragstream.gate.coverage import absent_names
    from ragstream.gate.neighbours import keep_unsure

    lacked = any(absent_names(text, evidence.settings, evidence.absent, []) for text in evidence.judged)
    weighed = keep_unsure(evidence.weighed, evidence.candidates, evidence.settings, treated=not lacked)
    return weighed.kept, weighed.report


def with_model(evidence: Evidence, env: StageEnv) -> tuple[list[str], A3Report]:
    """The A3 agent decides the candidates within its band; the evidence decides the rest."""
    from ragstream.gate.llm_gate import gate

    return gate(evidence.ask, evidence.candidates, env.services.runner, evidence.weighed, evidence.settings)


def weigh(sp: SuperPrompt, env: StageEnv) -> Evidence | None:
    """The evidence for each candidate of the selection, against a threshold calibrated on the project
    (None without candidates)."""
    from ragstream.gate.ask_parts import asking_parts
    from ragstream.gate.calibration import calibrated, corpus_null, off_topic_questions
    from ragstream.gate.coverage import unmentioned
    from ragstream.gate.evidence import own_terms, weigh_all
    from ragstream.gate.neighbours import keep_adjacent
    from ragstream.gate.references import keep_referenced
    from ragstream.index.manifest import generation_dir
    from ragstream.rendering.ask import normalized_ask
    from ragstream.retrieval.chunks import query_pieces

    chunks = sp.chunk_by_id()
    candidates = [chunks[cid] for cid in sp.selection_before(Stage.A3) if cid in chunks]
    ask = normalized_ask(sp)
    if not candidates:
        return None
    pieces = [q.text for q in query_pieces(sp)] or [ask]
    vectors = candidate_vectors(sp, candidates, env)
    settings = env.services.settings.gate
    project = env.context.project or sp.extras.project
    asked = asking_parts(sp, env.services.settings)  # the evidence: a chunk may answer one clause of the ask only
    parts = asking_parts(sp, env.services.settings, standalone=True)  # each part named when no kept chunk covers it
    texts = list(dict.fromkeys([*pieces, *asked, *parts]))
    embedder = env.services.embedder
    snapshot = env.services.searcher(project).snapshot() if project else None
    judged = respelled_texts(
        texts, snapshot, settings.shorthand
    )  # what the evidence reads: misspelt words as the corpus spells them
    frequency, rarity = ask_rarity(judged, env, project)
    if snapshot is not None and project:  # a chunk needs more evidence than off-topic questions reach here
        questions = off_topic_questions(env.services.settings.config_dir, settings)
        folder = generation_dir(env.services.searcher(project).paths.index_dir, snapshot.generation)
        calibration = calibrated(corpus_null(snapshot, folder, embedder.embed, questions, settings), settings)
    else:
        calibration = calibrated([], settings)
    settings = settings.model_copy(update={"min_evidence": calibration.min_evidence})
    embedded = embedder.embed(judged)
    weighed = weigh_all(judged, candidates, vectors, embedded, settings, rarity)
    weighed = keep_referenced(weighed, candidates, judged, embedded, embedder.embed, settings)
    weighed = keep_adjacent(weighed, candidates, settings)
    leaning = [clause for clause in asked if clause not in parts]
    return Evidence(
        ask,
        candidates,
        vectors,
        texts,
        judged,
        embedded,
        parts,
        leaning,
        rarity,
        unmentioned(frequency, snapshot) - own_terms(judged, settings),
        calibration,
        settings,
        weighed,
    )


def covered(sp: SuperPrompt, evidence: Evidence, kept: list[str], report: A3Report) -> A3Report:
    """`report` with the calibration and the parts of the ask no kept chunk covers."""
    from ragstream.gate.coverage import names_nothing_absent, uncovered_parts

    chunks = sp.chunk_by_id()
    index = {c.id: i for i, c in enumerate(evidence.candidates)}
    texts = evidence.texts
    read = dict(zip(texts, evidence.judged, strict=True))  # each part judged as the evidence read it
    written = {judged: text for text, judged in read.items()}  # and named as the user wrote it
    report.calibration = evidence.calibration.describe()
    found = uncovered_parts(
        [read[part] for part in evidence.parts],
        evidence.embedded[[texts.index(part) for part in evidence.parts]],
        [chunks[cid] for cid in kept],
        evidence.vectors[[index[cid] for cid in kept]],
        evidence.settings,
        evidence.rarity,
        evidence.absent,
        frozenset(cid for cid in kept if report.judged_by.get(cid) == "model"),
        [read[clause] for clause in evidence.leaning],
        evidence.embedded[[texts.index(clause) for clause in evidence.leaning]],
    )
    report.uncovered = [written.get(part, part) for part in found]
    judged_parts = {read[part] for part in evidence.parts}
    report.unanswered = [
        written.get(part, part)
        for part in found
        if part in judged_parts and names_nothing_absent(part, evidence.settings, evidence.absent)
    ]
    return report


def respelled_texts(texts: list[str], snapshot: Snapshot | None, shorthand: Mapping[str, str]) -> list[str]:
    """The texts with their misspelt words as the corpus spells them (`text/spelling`): "verificaton" held against
    every chunk of httpx's SSL page as the rarest word of the ask, and the gate kept nothing; and chat shorthand as
    the words it stands for (`gate.shorthand`): "hw do i exit my typer app ..." was named a topic the documents do
    not cover, "hw" being a word no document holds."""
    from ragstream.gate.coverage import corpus_vocabulary
    from ragstream.index.snapshot import bm25_tokens
    from ragstream.text.spelling import Respeller

    if snapshot is None or not snapshot.chunks:
        return texts
    vocabulary = corpus_vocabulary(snapshot)

    def stem_held(word: str) -> bool:  # "retrying" is no misspelling where the corpus says "retry"
        return any(snapshot.document_frequency(set(bm25_tokens([word])[0])).values())

    respell = Respeller(vocabulary, stem_held, shorthand)
    return [respell(text) for text in texts]


def candidate_vectors(sp: SuperPrompt, candidates: list[Chunk], env: StageEnv) -> np.ndarray:
    """Stored embeddings of the candidates (history turns, which the store does not hold, are embedded)."""
    import numpy as np

    services = env.services
    project = env.context.project or sp.extras.project
    stored = services.searcher(project).stored_vectors([c.id for c in candidates]) if project else {}
    missing = [c for c in candidates if c.id not in stored]
    fresh = dict(zip((c.id for c in missing), services.embedder.embed([c.text for c in missing]), strict=False))
    return np.asarray([stored.get(c.id, fresh.get(c.id)) for c in candidates], dtype=np.float32).reshape(
        len(candidates), -1
    )


def ask_rarity(
    texts: list[str], env: StageEnv, project: str | None, joined: bool = True
) -> tuple[dict[str, int], dict[str, float]]:
    """The content terms of `texts`: in how many of the project's chunks each occurs, and its rarity (idf). A word
    of what the user calls theirs that no chunk holds (`own_terms`: "our payment-gateway calls") weighs nothing:
    rarest of all, it outweighed every word a chunk could share, and the code that answers was dropped. A hyphenated
    term ("no-store") weighs as one word where some chunk spells it so (`joined`); where none does, its words alone
    weigh, and it is no word the documents lack ("rate-limit" where they say "rate limit")."""
    from ragstream.gate.evidence import own_terms, rarity_of, stemmed_terms

    settings = env.services.settings.gate
    terms = set().union(*(stemmed_terms(text, settings) for text in texts))
    compounds = set().union(*(stemmed_terms(text, settings, joined) for text in texts)) - terms
    snapshot = env.services.searcher(project).snapshot() if project else None
    counted = snapshot.document_frequency(terms | compounds) if snapshot else dict.fromkeys(terms, 1)
    frequency = {t: n for t, n in counted.items() if t in terms}
    held = {t: n for t, n in counted.items() if t in terms or n > 0}
    rarity = rarity_of(held, len(snapshot.chunks) if snapshot else 1)
    for term in own_terms(texts, settings):
        if frequency.get(term) == 0:
            rarity[term] = 0.0
    return frequency, rarity

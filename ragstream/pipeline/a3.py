"""The A3 NLI Gate stage: keep or drop each candidate the selection holds, on the evidence the run has."""

from __future__ import annotations

import numpy as np

from ragstream.agents.a3_nli_gate import (
    asking_parts,
    calibrated,
    corpus_null,
    gate,
    keep_referenced,
    off_topic_questions,
    rarity_of,
    stemmed_terms,
    uncovered_parts,
    unmentioned,
    weigh_all,
)
from ragstream.ingestion.manifest import generation_dir
from ragstream.rendering.ask import normalized_ask
from ragstream.retrieval.chunks import query_pieces
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.state import A3Report, Chunk, Stage, SuperPrompt


def candidate_vectors(sp: SuperPrompt, candidates: list[Chunk], env: StageEnv) -> np.ndarray:
    """Stored embeddings of the candidates (history turns, which the store does not hold, are embedded)."""
    services = env.services
    project = env.context.project or sp.extras.project
    stored = services.searcher(project).stored_vectors([c.id for c in candidates]) if project else {}
    missing = [c for c in candidates if c.id not in stored]
    fresh = dict(zip((c.id for c in missing), services.embedder.embed([c.text for c in missing]), strict=False))
    return np.asarray([stored.get(c.id, fresh.get(c.id)) for c in candidates], dtype=np.float32).reshape(
        len(candidates), -1
    )


def ask_rarity(texts: list[str], env: StageEnv, project: str | None) -> tuple[dict[str, int], dict[str, float]]:
    """The content terms of `texts`: in how many of the project's chunks each occurs, and its rarity (idf)."""
    settings = env.services.settings.gate
    terms = set().union(*(stemmed_terms(text, settings) for text in texts))
    snapshot = env.services.searcher(project).snapshot() if project else None
    frequency = snapshot.document_frequency(terms) if snapshot else dict.fromkeys(terms, 1)
    return frequency, rarity_of(frequency, len(snapshot.chunks) if snapshot else 1)


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[A3Report]:
    chunks = sp.chunk_by_id()
    candidates = [chunks[cid] for cid in sp.selection_before(Stage.A3) if cid in chunks]
    ask = normalized_ask(sp)
    if not candidates:  # the plan retrieved nothing, or retrieval failed and the run continues
        return StageOutput(report=A3Report(agent="none (no candidates)"), selection=[])
    pieces = [q.text for q in query_pieces(sp)] or [ask]
    vectors = candidate_vectors(sp, candidates, env)
    settings = env.services.settings.gate
    project = env.context.project or sp.extras.project
    asked = asking_parts(sp, env.services.settings)  # the evidence: a chunk may answer one clause of the ask only
    parts = asking_parts(sp, env.services.settings, standalone=True)  # each part named when no kept chunk covers it
    texts = list(dict.fromkeys([*pieces, *asked, *parts]))
    frequency, rarity = ask_rarity(texts, env, project)
    embedder = env.services.embedder
    snapshot = env.services.searcher(project).snapshot() if project else None
    if snapshot is not None and project:  # a chunk needs more evidence than off-topic questions reach here
        questions = off_topic_questions(env.services.settings.config_dir, settings)
        folder = generation_dir(env.services.searcher(project).paths.index_dir, snapshot.generation)
        calibration = calibrated(corpus_null(snapshot, folder, embedder.embed, questions, settings), settings)
    else:
        calibration = calibrated([], settings)
    settings = settings.model_copy(update={"min_evidence": calibration.min_evidence})
    embedded = embedder.embed(texts)
    weighed = weigh_all(texts, candidates, vectors, embedded, settings, rarity)
    weighed = keep_referenced(weighed, candidates, texts, embedded, embedder.embed, settings)
    kept, report = weighed.kept, weighed.report
    if not env.services.offline:
        kept, report = gate(ask, candidates, env.services.runner, weighed, settings)
    # What the documents do not cover is measured on what was kept, whoever decided it: a model's keep is
    # no evidence that every part of the ask is answered, only within the band where its word decides.
    index = {c.id: i for i, c in enumerate(candidates)}
    absent = unmentioned(frequency, snapshot)
    report.calibration = calibration.describe()
    report.uncovered = uncovered_parts(
        parts,
        embedded[[texts.index(part) for part in parts]],
        [chunks[cid] for cid in kept],
        vectors[[index[cid] for cid in kept]],
        settings,
        rarity,
        absent,
        frozenset(cid for cid in kept if report.judged_by.get(cid) == "model"),
    )
    return StageOutput(report=report, selection=kept)
